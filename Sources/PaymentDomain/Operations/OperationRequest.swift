import Crypto
import Foundation
import JSON

/// An operation on an authorised payment as a backend publishes it to `paypipe.jobs` with routing key
/// `payment.capture.requested`, `payment.void.requested` or `payment.refund.requested` (contract:
/// docs/schemas/operation.schema.json, docs/job-contract.md "Operations"). Unknown fields are ignored.
///
/// The operation's kind comes from the routing key, not the body, and is part of the content hash: the same
/// `operationId` published as a void after a capture is a conflict, never a second operation.
public struct OperationRequest: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable, Hashable {
        case capture, void, refund

        /// `payment.<kind>.requested`.
        public var routingKey: String { "payment.\(rawValue).requested" }

        public init?(routingKey: String) {
            guard let kind = Kind.allCases.first(where: { $0.routingKey == routingKey }) else { return nil }
            self = kind
        }
    }

    /// Which payment the operation is for. A payment id is checked against the operation's merchant by whoever looks
    /// it up: a merchant can never operate on another merchant's payment by naming its id.
    public enum PaymentReference: Sendable, Equatable, Hashable {
        case paymentId(UUID)
        /// The `jobId` of the payment job, under the operation's `merchantId`.
        case jobId(String)
    }

    public let kind: Kind
    /// The idempotency key, unique per merchant (1-128 of `[A-Za-z0-9._:-]`).
    public let operationId: String
    public let merchantId: String
    public let payment: PaymentReference
    /// Minor units. Capture: absent = the whole authorised amount. Refund: absent = everything still refundable.
    /// Void: never present (a lower capture or a refund is the partial form).
    public let amount: Int64?
    /// SHA-256 of the contract fields in canonical form, with the kind: the same operation id with another hash is an
    /// `operation_conflict`; re-serialising the same operation (key order, spacing, a payment id's case) is not.
    public let contentHash: [UInt8]

    /// The largest amount in minor units, as for payment jobs (13 digits on the gateway, 11 accepted in the contract).
    public static let maximumAmount: Int64 = 99_999_999_999

    public init(kind: Kind, operationId: String, merchantId: String, payment: PaymentReference, amount: Int64?) {
        self.init(kind: kind, operationId: operationId, merchantId: merchantId, payment: payment, amount: amount,
                  contentHash: Self.contentHash(kind: kind, operationId: operationId, merchantId: merchantId, payment: payment, amount: amount))
    }

    private init(kind: Kind, operationId: String, merchantId: String, payment: PaymentReference, amount: Int64?, contentHash: [UInt8]) {
        self.kind = kind
        self.operationId = operationId
        self.merchantId = merchantId
        self.payment = payment
        self.amount = amount
        self.contentHash = contentHash
    }

    /// An operation that could not be used (``DecodingError/invalid``) as it is recorded (`failed`, `invalid_job`): its
    /// kind, id and merchant, no payment and no amount, and a content hash no usable operation can have (it covers the
    /// reason under a member no contract has). A usable operation published later under the same `operationId` is
    /// therefore an `operation_conflict`, never a repeat of the invalid one, whatever payment it names (a payment whose
    /// `jobId` is `-` included). `payment` is not recorded; it names no payment.
    public static func unusable(kind: Kind, operationId: String, merchantId: String, reason: String) -> OperationRequest {
        let record = JSONValue.object([
            ("invalid", .string(reason)), ("kind", .string(kind.rawValue)), ("merchantId", .string(merchantId)), ("operationId", .string(operationId)),
        ])
        return OperationRequest(kind: kind, operationId: operationId, merchantId: merchantId, payment: .jobId(""), amount: nil,
                                contentHash: SHA256.hash(JobBody.canonicalJSON(record)))
    }

    /// Why an operation could not be used. `unaddressed` errors name no merchant and operation id, so nothing can be
    /// recorded or reported: the message is dead-lettered (`malformed_job`). `invalid` ones are addressed: the
    /// operation is recorded `failed` with `invalid_job` and the reason, and reported.
    public enum DecodingError: Error, Equatable, CustomStringConvertible {
        case unaddressed(reason: String)
        case invalid(merchantId: String, operationId: String, reason: String)

        public var code: String {
            switch self {
            case .unaddressed: "malformed_job"
            case .invalid: "invalid_job"
            }
        }

        public var description: String {
            switch self {
            case .unaddressed(let reason): "malformed operation: \(reason)"
            case .invalid(_, let operationId, let reason): "invalid operation \(operationId): \(reason)"
            }
        }
    }

    /// An operation body's strict object and its address (merchant and operation id), shared by every operation job
    /// (``CompletionRequest`` too); without them it is `unaddressed`.
    static func addressed(_ body: [UInt8]) throws(DecodingError) -> (object: JSONValue, merchantId: String, operationId: String) {
        do {
            let (object, merchantId, operationId) = try JobBody.addressed(body, idKey: "operationId")
            return (object, merchantId, operationId)
        } catch {
            throw .unaddressed(reason: error.reason)
        }
    }

    public static func decode(_ body: [UInt8], kind: Kind) throws(DecodingError) -> OperationRequest {
        let (object, merchantId, operationId) = try addressed(body)
        func invalid(_ reason: String) -> DecodingError { .invalid(merchantId: merchantId, operationId: operationId, reason: reason) }

        let payment: PaymentReference
        switch (object["paymentId"], object["jobId"]) {
        case (.string(let text)?, nil):
            guard let id = UUID(uuidString: text) else { throw invalid("paymentId must be a UUID") }
            payment = .paymentId(id)
        case (nil, .string(let jobId)?):
            guard JobBody.isIdentifier(jobId) else { throw invalid("jobId must be an identifier of 1-128 characters [A-Za-z0-9._:-]") }
            payment = .jobId(jobId)
        case (nil, nil):
            throw invalid("the payment must be named by paymentId or by jobId")
        case (_?, _?):
            // Two names for one payment could disagree; which one wins would be a guess.
            throw invalid("name the payment by paymentId or by jobId, not both")
        default:
            throw invalid("paymentId and jobId must be strings")
        }

        var amount: Int64?
        switch object["amount"] {
        case nil, .null?: break
        case .integer(let value)?:
            guard (1...maximumAmount).contains(value) else { throw invalid("amount must be between 1 and \(maximumAmount) minor units") }
            amount = value
        default:
            throw invalid("amount must be an integer number of minor units")
        }
        if kind == .void, amount != nil {
            throw invalid("a void takes no amount: capture a lower amount, or refund part of a capture")
        }
        return OperationRequest(kind: kind, operationId: operationId, merchantId: merchantId, payment: payment, amount: amount)
    }

    static func contentHash(kind: Kind, operationId: String, merchantId: String, payment: PaymentReference, amount: Int64?) -> [UInt8] {
        let reference: (String, JSONValue) = switch payment {
        case .paymentId(let id): ("paymentId", .string(id.paymentIDText))
        case .jobId(let jobId): ("jobId", .string(jobId))
        }
        let contract = JSONValue.object(omittingAbsent: [
            ("kind", .string(kind.rawValue)), ("operationId", .string(operationId)), ("merchantId", .string(merchantId)),
            (reference.0, reference.1), ("amount", amount.map(JSONValue.integer)),
        ])
        return SHA256.hash(JobBody.canonicalJSON(contract))
    }
}
