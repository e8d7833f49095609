import Foundation
import Pipeline

/// What a message on `paypipe.results` is about, carried outside its body so a backend can wait for one job's result
/// or select one merchant's without parsing JSON (docs/job-contract.md "Receiving results"): the AMQP
/// `correlation_id` and the string headers `merchantId`, `jobId`, `paymentId`, `operationId`, `credentialId` (each when known) and
/// `type` (always, set by ``NotifyStage/resultsExchangeMessage(id:type:body:timestamp:merchantId:about:)``).
public struct ResultSubject: Sendable, Equatable {
    public var merchantId: String?
    public var jobId: String?
    public var paymentId: String?
    /// Set for an operation's event: its `operationId`, which is then the correlation id.
    public var operationId: String?
    /// Set for a credential's event (``CredentialEvent``): the credential's id, which is then the correlation id.
    public var credentialId: String?

    public init(merchantId: String? = nil, jobId: String? = nil, paymentId: String? = nil, operationId: String? = nil, credentialId: String? = nil) {
        self.merchantId = merchantId
        self.jobId = jobId
        self.paymentId = paymentId
        self.operationId = operationId
        self.credentialId = credentialId
    }

    /// The id the publisher chose for what it asked: the operation's for an operation event, the credential's for a
    /// credential event, else the job's.
    public var correlationId: String? { operationId ?? credentialId ?? jobId }

    /// The AMQP headers it contributes, besides `type`.
    var headers: [String: String] {
        var headers: [String: String] = [:]
        headers["merchantId"] = merchantId
        headers["jobId"] = jobId
        headers["paymentId"] = paymentId
        headers["operationId"] = operationId
        headers["credentialId"] = credentialId
        return headers
    }
}

extension PaymentEvent {
    /// The job's payment: correlated by the job's id.
    public var subject: ResultSubject {
        ResultSubject(merchantId: merchantId, jobId: jobId, paymentId: paymentId.paymentIDText)
    }
}

extension OperationEvent {
    /// The operation on the job's payment: correlated by the operation's id; `jobId` is the payment's job.
    public var subject: ResultSubject {
        ResultSubject(merchantId: payment.merchantId, jobId: payment.jobId, paymentId: payment.id.paymentIDText, operationId: operation.operationId)
    }
}

extension OperationalEvent {
    /// Whatever of the ids its data carries (`webhook.exhausted`: all of a payment's; `endpoint.disabled`: the merchant).
    public var subject: ResultSubject {
        func field(_ name: String) -> String? { fields.first { $0.key == name }?.value.stringValue }
        return ResultSubject(merchantId: field("merchantId"), jobId: field("jobId"), paymentId: field("paymentId"))
    }
}
