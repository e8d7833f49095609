import Foundation

/// How a payment's AUTH is captured: the merchant document's `gateway.captureMode` / `gateway.captureWithin`, which a
/// job's `captureMode` / `captureWithin` override. Absent everywhere: `automatic`.
public struct CapturePolicy: Sendable, Equatable, Hashable {
    public var mode: CaptureMode
    /// Seconds after the authorisation after which an uncaptured manual authorisation is voided; only with `manual`.
    public var captureWithin: TimeInterval?

    /// The longest `captureWithin` accepted: card networks release uncaptured authorisations within days to weeks, and
    /// a longer wait would only void an authorisation that no longer holds funds.
    public static let maximumCaptureWithin: TimeInterval = 31 * 86_400

    public static let automatic = CapturePolicy(mode: .automatic, captureWithin: nil)

    public init(mode: CaptureMode, captureWithin: TimeInterval?) {
        self.mode = mode
        self.captureWithin = mode == .manual ? captureWithin : nil
    }

    /// Why a `captureMode` or `captureWithin` cannot be used; the reason names the field.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }

        public init(reason: String) { self.reason = reason }
    }

    /// This policy with a document's (or a job's) optional `captureMode` and `captureWithin` texts applied over it.
    /// A `captureWithin` without manual capture is refused rather than ignored: the publisher expects a void that
    /// would never come.
    public func overridden(mode modeText: String?, captureWithin withinText: String?) throws(Invalid) -> CapturePolicy {
        var mode = self.mode
        var within = self.captureWithin
        if let modeText {
            guard let parsed = CaptureMode(rawValue: modeText) else { throw Invalid(reason: "captureMode must be \"automatic\" or \"manual\"") }
            if parsed != mode { within = nil }
            mode = parsed
        }
        if let withinText {
            guard let seconds = Self.duration(withinText), seconds > 0, seconds <= Self.maximumCaptureWithin else {
                throw Invalid(reason: "captureWithin must be an ISO 8601 duration of days, hours, minutes or seconds (e.g. P7D, PT36H), at most 31 days")
            }
            guard mode == .manual else { throw Invalid(reason: "captureWithin needs captureMode \"manual\"") }
            within = seconds
        }
        return CapturePolicy(mode: mode, captureWithin: within)
    }

    /// When an authorisation made at `authorizedAt` is voided if not captured.
    public func captureDeadline(authorizedAt: Date) -> Date? {
        captureWithin.map { authorizedAt.addingTimeInterval($0) }
    }

    /// An ISO 8601 duration of weeks (`PnW`) or days, hours, minutes and whole seconds (`PnDTnHnMnS`), in seconds.
    /// Years and months are refused: their length depends on the calendar date, an authorisation's hold does not.
    static func duration(_ text: String) -> TimeInterval? {
        var rest = Substring(text)
        guard rest.popFirst() == "P", !rest.isEmpty else { return nil }
        // Units in ISO 8601's order, each at most once: weeks, days, then after "T" hours, minutes, seconds.
        let units: [(unit: String, seconds: TimeInterval)] = [("W", 7 * 86_400), ("D", 86_400), ("TH", 3600), ("TM", 60), ("TS", 1)]
        var seconds: TimeInterval = 0
        var inTime = false
        var used: [Int] = []
        var digits = ""
        for character in rest {
            if character.isASCII, character.isNumber {
                guard digits.count < 6 else { return nil }
                digits.append(character)
            } else if character == "T" {
                guard !inTime, digits.isEmpty else { return nil }
                inTime = true
            } else {
                let name = (inTime ? "T" : "") + String(character)
                guard let rank = units.firstIndex(where: { $0.unit == name }), rank > (used.last ?? -1),
                      let value = Double(digits) else { return nil }
                used.append(rank)
                seconds += value * units[rank].seconds
                digits = ""
            }
        }
        // Digits without a unit, a "T" without a time unit, weeks with anything else: malformed.
        guard digits.isEmpty, !used.isEmpty, !inTime || used.last! >= 2, !(used.contains(0) && used.count > 1) else { return nil }
        return seconds
    }
}
