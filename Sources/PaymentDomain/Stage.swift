import Foundation
import JSON

/// The four stages a payment passes through, in pipeline order, and `operations` (capture, void, refund of an
/// authorised payment), which no payment passes through: it consumes its own jobs and hands results to `notify`.
///
/// Each stage is consumed from its own durable quorum queue so it can be scaled on its own;
/// the names here are the single source of every queue, routing key and metric label (the runtime derives them from
/// the name, Pipeline's `Stage.name`).
public enum Stage: String, Sendable, CaseIterable, Codable, Comparable {
    case decrypt
    case authorize
    case submit
    case notify
    case operations

    /// Whether payments wait in this stage (`payments.stage`): the reconciler re-drives those; `operations` keeps its
    /// state in its own tables.
    public var carriesPayments: Bool { self != .operations }

    /// The stage that follows this one; `nil` after notification.
    public var next: Stage? {
        switch self {
        case .decrypt: .authorize
        case .authorize: .submit
        case .submit: .notify
        case .notify, .operations: nil
        }
    }

    public static func < (lhs: Stage, rhs: Stage) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// Where a payment is in its lifecycle: the `payments.stage` column. While a stage's queue carries the payment it is
/// that ``Stage``; once notification has finished it is `done` and leaves every queue.
public enum PaymentStage: String, Sendable, CaseIterable, Codable {
    case decrypt
    case authorize
    case submit
    case notify
    case done

    public init(_ stage: Stage) {
        switch stage {
        case .decrypt: self = .decrypt
        case .authorize: self = .authorize
        case .submit: self = .submit
        case .notify: self = .notify
        // No payment waits in the operations stage: its payments are done with the AUTH pipeline.
        case .operations: self = .done
        }
    }

    /// The stage whose queue carries the payment; `nil` once it is done.
    public var queueStage: Stage? { Stage(rawValue: rawValue) }
}

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