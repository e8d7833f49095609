import Foundation

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date. Parsed so the delay can be recorded with the
/// attempt; the next attempt itself follows the stage's retry tiers (RabbitMQ TTL queues cannot hold one message
/// for an arbitrary time), so a `Retry-After` longer than the next tier is honoured only as far as the schedule goes.
public enum RetryAfter {
    /// Seconds to wait, or `nil` when absent or unparsable. Negative or past dates give 0.
    public static func seconds(_ value: String?, now: Date = Date()) -> Double? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if let seconds = Int(text) { return Double(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: text) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
