import Foundation

/// A W3C Trace Context (https://www.w3.org/TR/trace-context/): the trace a message belongs to and the span that sent it.
///
/// The runtime reads it from a delivery's `traceparent`/`tracestate` AMQP headers, starts a new trace when they are absent
/// or malformed (a malformed header is never an error: the job is handled, only the publisher's trace is lost), and
/// writes it on everything the delivery causes (hand-offs, results events, the webhook request) with the handling
/// stage's span as the parent. Ids are lowercase hex, as the header and OTLP/JSON write them.
public struct TraceContext: Sendable, Equatable, Hashable {
    /// 32 lowercase hex digits, never all zero.
    public let traceId: String
    /// 16 lowercase hex digits, never all zero: the span this context points at (the parent of what it is sent with).
    public let spanId: String
    /// The trace-flags byte (bit 0: sampled), passed on as received.
    public let flags: UInt8
    /// The vendors' `tracestate`, passed on unchanged when it is well-formed; nil when absent or dropped.
    public let state: String?

    public static let traceparentHeader = "traceparent"
    public static let tracestateHeader = "tracestate"
    /// The flags of a trace the runtime starts: sampled (the exporter, when configured, keeps every span).
    public static let sampled: UInt8 = 0x01

    /// A context from validated parts; `nil` when an id is not lowercase hex of the right length or is all zero.
    public init?(traceId: String, spanId: String, flags: UInt8 = TraceContext.sampled, state: String? = nil) {
        guard Self.isValidId(traceId, digits: 32), Self.isValidId(spanId, digits: 16) else { return nil }
        (self.traceId, self.spanId, self.flags, self.state) = (traceId, spanId, flags, state.flatMap(Self.validState))
    }

    private init(trusted traceId: String, spanId: String, flags: UInt8, state: String?) {
        (self.traceId, self.spanId, self.flags, self.state) = (traceId, spanId, flags, state)
    }

    /// `00-<trace-id>-<span-id>-<flags>`: what this context is sent as (version 00, whatever version it came in).
    public var traceparent: String {
        "00-\(traceId)-\(spanId)-\(Self.hex(UInt64(flags), digits: 2))"
    }

    /// The `traceId` and `spanId` fields of a log line about work in this context.
    public var logFields: [(String, LogValue)] {
        [("traceId", .string(traceId)), ("spanId", .string(spanId))]
    }

    /// The log fields of the context a payment's row keeps (`traceparent`, `tracestate`), for a line about the payment
    /// written outside any delivery's handling (an upkeep round); none when the row keeps none.
    public static func logFields(traceparent: String?, tracestate: String? = nil) -> [(String, LogValue)] {
        parse(traceparent: traceparent, tracestate: tracestate)?.logFields ?? []
    }

    /// Parses a `traceparent` header strictly (trace-context §3.2): two lowercase hex digits of version other than `ff`;
    /// for version 00 exactly 55 characters; for a later version at least 55, and a `-` after them when longer (its
    /// extra fields are ignored); ids lowercase hex and not all zero; flags two hex digits. `tracestate` is kept only with
    /// a valid `traceparent`, and only when well-formed (``validState(_:)``). `nil`: start a new trace.
    public static func parse(traceparent: String?, tracestate: String? = nil) -> TraceContext? {
        guard let header = traceparent?.trimmingCharacters(in: .whitespaces) else { return nil }
        let characters = Array(header.utf8)
        guard characters.count >= 55 else { return nil }
        let version = String(decoding: characters[0..<2], as: UTF8.self)
        guard isLowerHex(version), version != "ff" else { return nil }
        if version == "00" {
            guard characters.count == 55 else { return nil }
        } else if characters.count > 55, characters[55] != UInt8(ascii: "-") {
            return nil
        }
        guard characters[2] == UInt8(ascii: "-"), characters[35] == UInt8(ascii: "-"), characters[52] == UInt8(ascii: "-") else { return nil }
        let traceId = String(decoding: characters[3..<35], as: UTF8.self)
        let spanId = String(decoding: characters[36..<52], as: UTF8.self)
        let flagsText = String(decoding: characters[53..<55], as: UTF8.self)
        guard isLowerHex(flagsText), let flags = UInt8(flagsText, radix: 16) else { return nil }
        return TraceContext(traceId: traceId, spanId: spanId, flags: flags, state: tracestate)
    }

    /// A new trace with a new root span id, from a CSPRNG (``SystemRandomNumberGenerator``: the kernel's getrandom).
    public static func newTrace() -> TraceContext {
        var generator = SystemRandomNumberGenerator()
        return newTrace(using: &generator)
    }

    /// A new trace from `generator` (tests give a seeded one); ids are redrawn until not all zero.
    public static func newTrace(using generator: inout some RandomNumberGenerator) -> TraceContext {
        TraceContext(trusted: randomId(words: 2, using: &generator), spanId: randomId(words: 1, using: &generator), flags: sampled, state: nil)
    }

    /// A new span of the same trace (same flags and state): the context of work done on behalf of this one.
    public func child() -> TraceContext {
        var generator = SystemRandomNumberGenerator()
        return child(using: &generator)
    }

    public func child(using generator: inout some RandomNumberGenerator) -> TraceContext {
        TraceContext(trusted: traceId, spanId: Self.randomId(words: 1, using: &generator), flags: flags, state: state)
    }

    /// `tracestate` as trace-context §3.3 bounds it: at most 512 characters and 32 comma-separated `key=value` members
    /// of printable ASCII without `,` in a value; anything else is dropped (not the trace).
    public static func validState(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 512, trimmed.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7e }) else { return nil }
        let members = trimmed.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard members.count <= 32 else { return nil }
        for member in members where !member.isEmpty {
            guard let equals = member.firstIndex(of: "="), equals != member.startIndex, member.index(after: equals) != member.endIndex else {
                return nil
            }
        }
        return trimmed
    }

    private static func randomId(words: Int, using generator: inout some RandomNumberGenerator) -> String {
        while true {
            let values = (0..<words).map { _ in generator.next() as UInt64 }
            if values.contains(where: { $0 != 0 }) { return values.map { hex($0, digits: 16) }.joined() }
        }
    }

    static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    private static func isLowerHex(_ text: String) -> Bool {
        text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    private static func isValidId(_ text: String, digits: Int) -> Bool {
        text.utf8.count == digits && isLowerHex(text) && text.utf8.contains { $0 != UInt8(ascii: "0") }
    }
}
