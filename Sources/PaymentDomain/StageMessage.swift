import Foundation
import JSON

/// The hand-off between stages after decryption: a reference to the payment, never its data.
///
/// Everything a stage needs is in PostgreSQL, so a lost or duplicated hand-off is harmless: a
/// redelivery re-reads the payment and acts on its current status, and the reconciler can re-create a
/// hand-off from the database alone.
public struct StageMessage: Sendable, Codable, Equatable {
    public let paymentId: UUID
    public let merchantId: String
    public let jobId: String
    /// The W3C `traceparent`/`tracestate` the payment's row keeps (its decrypt span's, migration 15), for a hand-off
    /// built from the row outside any delivery's handling (a re-drive): it is sent with them, so the payment's later
    /// spans, webhook and results stay in its trace. Not part of the body; nil for a hand-off that continues the
    /// delivery being handled (the runtime stamps that one).
    public private(set) var traceparent: String? = nil
    public private(set) var tracestate: String? = nil

    private enum CodingKeys: String, CodingKey { case paymentId, merchantId, jobId }

    public init(paymentId: UUID, merchantId: String, jobId: String, traceparent: String? = nil, tracestate: String? = nil) {
        self.paymentId = paymentId
        self.merchantId = merchantId
        self.jobId = jobId
        self.traceparent = traceparent
        self.tracestate = tracestate
    }

    /// The same hand-off whatever trace it reports to (its body and `message_id` are the same).
    public static func == (lhs: StageMessage, rhs: StageMessage) -> Bool {
        lhs.paymentId == rhs.paymentId && lhs.merchantId == rhs.merchantId && lhs.jobId == rhs.jobId
    }

    /// `{"jobId":…,"merchantId":…,"paymentId":…}`, keys sorted. Written and read with the JSON module rather than
    /// Foundation's Codable coders: every stage decodes one of these per delivery and encodes one per hand-off, and
    /// `JSONEncoder`/`JSONDecoder` cost several times the whole message's other handling.
    public func encoded() -> [UInt8] {
        JSONValue.object([
            ("jobId", .string(jobId)), ("merchantId", .string(merchantId)), ("paymentId", .string(paymentId.paymentIDText)),
        ]).serialized()
    }

    /// Strict like the job parser (one JSON object, no duplicate keys); members other than the three are ignored.
    public static func decode(_ bytes: [UInt8]) throws(StageFailure) -> StageMessage {
        guard let object = try? JSONValue.parse(bytes, maxDepth: 4),
              let paymentId = object["paymentId"]?.stringValue.flatMap({ UUID(paymentIDText: $0) }),
              let merchantId = object["merchantId"]?.stringValue, let jobId = object["jobId"]?.stringValue
        else {
            throw .unattributable(code: "malformed_message", reason: "stage message is not a valid {paymentId, merchantId, jobId} object")
        }
        return StageMessage(paymentId: paymentId, merchantId: merchantId, jobId: jobId)
    }
}
