import Foundation

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date. Parsed so the delay can be recorded with the
/// attempt; the next attempt itself follows the stage's retry tiers (RabbitMQ TTL queues cannot hold one message
/// for an arbitrary time), so a `Retry-After` longer than the next tier is honoured only as far as the schedule goes.
///
/// The value comes from a peer that may be hostile: whatever it says, the result is within 0…``maximumSeconds``, so
/// nothing downstream (an `Int(seconds)`, a pause, a record) sees a delay it cannot represent.
public enum RetryAfter {
    /// One day: longer than any retry tier and the endpoint gate's pause cap, so clamping changes no decision.
    public static let maximumSeconds: Double = 86_400

    /// Seconds to wait, or `nil` when absent or unparsable. Negative or past dates give 0; anything beyond
    /// ``maximumSeconds`` (however many digits) gives ``maximumSeconds``.
    public static func seconds(_ value: String?, now: Date = Date()) -> Double? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if let seconds = clampedDelaySeconds(text) { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: text) else { return nil }
        return min(maximumSeconds, max(0, date.timeIntervalSince(now)))
    }

    /// delay-seconds (`1*DIGIT`, an optional sign tolerated), clamped without ever converting a number that
    /// does not fit: 20 digits of "9" are as valid a delay as "86400".
    private static func clampedDelaySeconds(_ text: String) -> Double? {
        var digits = Substring(text)
        var negative = false
        if let sign = digits.first, sign == "-" || sign == "+" {
            negative = sign == "-"
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        if negative { return 0 }
        let significant = digits.drop { $0 == "0" }
        // Six significant digits already reach 86,400 or more: compare lengths before converting.
        guard significant.count <= 6, let seconds = Int(significant.isEmpty ? "0" : significant) else { return maximumSeconds }
        return min(maximumSeconds, Double(seconds))
    }
}
