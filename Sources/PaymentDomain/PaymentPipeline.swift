import Crypto
import Foundation
import JSON
// The failure dispositions the domain decides in (StageFailure), seen by everything that sees the domain.
@_exported import StageContract

// A payment's way through the pipeline, the words every stage speaks: the stages and a payment's place among them,
// its statuses and their legal changes, the hand-off messages between stages and a payment id's one text form, and
// what a stage's pure `decide` concludes (a hand-off, a rejection, a payment's failure).

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

/// A payment's status. Spelled the American way, matching the event types sent to merchants
/// (`payment.authorized`, …) and the `payments.status` column, which has a CHECK on these values.
public enum PaymentStatus: String, Sendable, CaseIterable, Codable {
    /// The job was accepted and the payment row exists; the token is not yet decrypted.
    case received
    /// Card data is stored (encrypted); or, for gateway-decrypts merchants, the token is verified.
    case decrypted
    /// Decrypted, but the job had `amountPending` (a deferred payment): nothing is sent until a
    /// `payment.complete.requested` operation gives the amount, or the credential's lifetime ends (`prime_expired`).
    /// No queue carries it meanwhile (`payments.stage` `done`); the operations worker moves it on.
    case awaitingAmount = "awaiting_amount"
    /// The gateway request (claims) is built and stored; it may be sent.
    case prepared
    /// A gateway attempt was recorded as `sending`; its outcome is not yet known.
    case submitting
    case authorized
    case declined
    case failed
    /// The outcome could not be established automatically; an operator resolves it.
    case needsReview = "needs_review"

    /// Terminal statuses are final: nothing but notification happens after them.
    public var isTerminal: Bool {
        switch self {
        case .authorized, .declined, .failed, .needsReview: true
        case .received, .decrypted, .awaitingAmount, .prepared, .submitting: false
        }
    }

    /// The stage whose queue carries a payment in this status.
    public var stage: Stage {
        switch self {
        case .received: .decrypt
        case .decrypted: .authorize
        case .prepared, .submitting: .submit
        // Notify tells the merchant it waits (`payment.awaiting_amount`) and marks it done: then it waits in no
        // stage's queue until a `payment.complete.requested` operation moves it on.
        case .awaitingAmount: .notify
        case .authorized, .declined, .failed, .needsReview: .notify
        }
    }
}

/// How a payment's AUTH is settled (`payments.capture_mode`, a job's `captureMode`; the rules around it are
/// ``CapturePolicy``): `automatic`, the AUTH settles by itself; `manual` suspends it until a capture.
public enum CaptureMode: String, Sendable, CaseIterable, Hashable {
    case automatic, manual
}

/// The one place that says which status changes are legal.
///
/// `PaymentStore` asks this type before every write (its statements bind only a `CheckedTransition`, set-based ones
/// included) and then guards the same change in SQL (`UPDATE … WHERE status = $expected`), so a redelivered or racing
/// message can never move a payment backwards or sideways.
public enum PaymentStateMachine {
    /// The status a payment is created in.
    public static let initialStatus = PaymentStatus.received

    /// Raised when code asks for a change the state machine forbids; that is a bug, never bad input.
    public struct IllegalTransition: Error, Equatable, CustomStringConvertible {
        public let from: PaymentStatus
        public let to: PaymentStatus
        public var description: String { "illegal payment transition \(from.rawValue) → \(to.rawValue)" }
    }

    /// Statuses reachable in one step from `status`.
    public static func successors(of status: PaymentStatus) -> Set<PaymentStatus> {
        switch status {
        case .received: [.decrypted, .failed]
        case .decrypted: [.prepared, .awaitingAmount, .failed]
        // Completed (the amount given: back to authorize), or its credential expired.
        case .awaitingAmount: [.decrypted, .failed]
        case .prepared: [.submitting, .declined, .failed, .needsReview]
        case .submitting: [.prepared, .authorized, .declined, .failed, .needsReview]
        // An operator closes a review by hand (`paypipe payment resolve`).
        case .needsReview: [.authorized, .declined, .failed]
        // The gateway authorised a payment PayPipe had failed (a late answer): a person must act.
        case .failed: [.needsReview]
        case .authorized, .declined: []
        }
    }

    public static func canTransition(from: PaymentStatus, to: PaymentStatus) -> Bool {
        successors(of: from).contains(to)
    }

    public static func validate(from: PaymentStatus, to: PaymentStatus) throws(IllegalTransition) {
        guard canTransition(from: from, to: to) else { throw IllegalTransition(from: from, to: to) }
    }
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

/// The hand-off of a finished operation to `notify`: a payment's hand-off (``StageMessage``) with one more member,
/// `"operation"` (the operation's row id). Like a payment's it is a reference only; notify reads the operation and sends
/// its event, not the payment's. Its `message_id` is `operation:<row id>:notify`, and it is sent in the trace its payment's
/// row kept when it was built from the row (``StageMessage/traceparent``: a held event released by an operator).
public struct OperationEventMessage: Sendable, Equatable {
    public let payment: StageMessage
    public let operationRowId: Int64

    public init(payment: StageMessage, operationRowId: Int64) {
        self.payment = payment
        self.operationRowId = operationRowId
    }

    /// Its `message_id`: one per operation (consumers dedupe on it).
    public var id: String { "operation:\(operationRowId):notify" }

    public func encoded() -> [UInt8] {
        JSONValue.object([
            ("jobId", .string(payment.jobId)), ("merchantId", .string(payment.merchantId)), ("operation", .integer(operationRowId)),
            ("paymentId", .string(payment.paymentId.paymentIDText)),
        ]).serialized()
    }

    /// The operation row id a hand-off names, nil for a payment's own hand-off.
    public static func operation(in bytes: [UInt8]) -> Int64? {
        guard let object = try? JSONValue.parse(bytes, maxDepth: 4), let id = object["operation"]?.int64Value, id > 0 else { return nil }
        return id
    }
}

extension UUID {
    /// The one text form of a payment id in everything PayPipe writes (hand-offs, events, message ids, the card data's
    /// AAD, the gateway's order reference, CLI output): lowercase RFC 4122, as PostgreSQL prints a `uuid`. Parsing
    /// (``init(paymentIDText:)``, or `UUID(uuidString:)`) accepts either case.
    ///
    /// Written from the bytes: `uuidString` formats with `snprintf` (and then needs lowercasing), which every stage
    /// would pay several times per payment.
    public var paymentIDText: String { hexText(hyphenated: true) }

    /// The 32 hex digits of ``paymentIDText`` without its hyphens.
    public var paymentIDHex: String { hexText(hyphenated: false) }

    private func hexText(hyphenated: Bool) -> String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var count = 0
                for (index, byte) in bytes.enumerated() {
                    if hyphenated, index == 4 || index == 6 || index == 8 || index == 10 {
                        out[count] = UInt8(ascii: "-")
                        count += 1
                    }
                    out[count] = Hex.digit(byte >> 4)
                    out[count + 1] = Hex.digit(byte & 0x0F)
                    count += 2
                }
                return count
            }
        }
    }

    /// `UUID(uuidString:)`, without its `sscanf` for the canonical form (`8-4-4-4-12` hex digits of either case); any
    /// other text is left to Foundation, so exactly the same texts are accepted.
    public init?(paymentIDText text: String) {
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &value) { out -> Bool in
            var offset = 0, byte = 0
            var high: UInt8?
            for character in text.utf8 {
                defer { offset += 1 }
                if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                    guard character == UInt8(ascii: "-") else { return false }
                    continue
                }
                guard offset < 36, let nibble = Hex.nibble(character) else { return false }
                if let first = high {
                    out[byte] = first << 4 | nibble
                    byte += 1
                    high = nil
                } else {
                    high = nibble
                }
            }
            return offset == 36
        }
        guard parsed else {
            guard let parsed = UUID(uuidString: text) else { return nil }
            self = parsed
            return
        }
        self.init(uuid: value)
    }
}

/// What a stage's pure `decide` concludes for one message, besides the writes it asks for: the hand-off to publish,
/// or the failure the runtime routes (a dead letter, a retry).
public struct HandOff: Sendable, Equatable {
    public let stage: Stage
    public let message: StageMessage

    public init(_ stage: Stage, _ message: StageMessage) {
        (self.stage, self.message) = (stage, message)
    }
}

/// How a batch read found a merchant a message names.
public enum MerchantLookup<Merchant: Sendable>: Sendable {
    case found(Merchant)
    /// No merchant of that id was ever applied.
    case unknown
    /// It exists but cannot be used now (its key material does not load): the message's failure, as classified.
    case unavailable(StageFailure)
}

/// A permanent, payment-attributable failure a stage decides (the payment ends `failed` with `code`).
public struct Rejection: Error, Sendable, Equatable {
    public let code: String
    /// Human-readable; never card data or key material (it is stored and sent to the merchant).
    public let reason: String

    public init(code: String, reason: String) {
        (self.code, self.reason) = (code, reason)
    }
}

/// The rule every stage's `decide` follows for a payment met more than once in a batch: the first message that
/// writes decides, and each later one is "already handled": it gets the hand-off to wherever the first one's writes
/// leave the payment, and writes nothing. (Messages that write nothing decide alone: each sees the same rows.)
struct FirstDecides<Key: Hashable> {
    private var decided: [Key: HandOff] = [:]

    func earlier(_ key: Key) -> HandOff? { decided[key] }

    mutating func record(_ key: Key, _ handOff: HandOff) {
        decided[key] = handOff
    }
}

/// A permanent failure attributable to one payment: the payment ends `failed` with `code`, and the
/// failure is notified to the merchant like any other terminal result.
public struct PaymentFailure: Sendable, Equatable {
    public let paymentId: UUID
    /// Stable, machine-readable code (e.g. `signature_invalid`, `amount_mismatch`).
    public let code: String
    /// Human-readable reason. Must never contain card data or key material.
    public let reason: String

    public init(paymentId: UUID, code: String, reason: String) {
        self.paymentId = paymentId
        self.code = code
        self.reason = reason
    }
}

extension PaymentFailure {
    /// The failure the runtime carried to the record step.
    public init(_ failure: PermanentFailure) {
        self.init(paymentId: failure.subject, code: failure.code, reason: failure.reason)
    }

    /// As the runtime carries it (`StageFailure.permanent`).
    public var permanent: PermanentFailure { PermanentFailure(subject: paymentId, code: code, reason: reason) }
}

extension StageFailure {
    /// A permanent failure of a payment: it ends `failed` with the failure's code and is notified.
    public static func permanent(_ failure: PaymentFailure) -> StageFailure { .permanent(failure.permanent) }
}
