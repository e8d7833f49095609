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
        guard let date = HTTPDate.parse(text, now: now) else { return nil }
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

/// HTTP-date (RFC 9110 §5.6.7): the IMF-fixdate senders must use, and the two obsolete forms recipients should
/// accept. A fixed ASCII grammar read byte by byte: Foundation's `DateFormatter` traps on some non-ASCII text (a
/// peer's `Retry-After: Fr͔, 1Di c 9999 …` crashed the fuzz harness), and a header value is a peer's to choose.
/// The calendar arithmetic is Foundation's.
enum HTTPDate {
    /// `now` places rfc850's two-digit years (RFC 9110: one more than 50 years ahead is the last such year past).
    static func parse(_ text: String, now: Date) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        return imfFixdate(bytes) ?? rfc850(bytes, now: now) ?? asctime(bytes)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ bytes: [UInt8]) -> Date? {
        guard let parts = commaForm(bytes, dayNames: shortDayNames, separator: " ", yearDigits: 4) else { return nil }
        return date(year: parts.year, month: parts.month, day: parts.day, time: parts.time)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year more than 50 years ahead is the last such year past.
    private static func rfc850(_ bytes: [UInt8], now: Date) -> Date? {
        guard let parts = commaForm(bytes, dayNames: longDayNames, separator: "-", yearDigits: 2) else { return nil }
        let thisYear = gmtCalendar.component(.year, from: now)
        var year = thisYear - thisYear % 100 + parts.year
        if year > thisYear + 50 { year -= 100 }
        return date(year: year, month: parts.month, day: parts.day, time: parts.time)
    }

    /// The shape both forms above share: day name, comma, day, month and year joined by `separator`, time, GMT.
    private static func commaForm(_ bytes: [UInt8], dayNames: [String], separator: String, yearDigits: Int)
        -> (year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int))? {
        var reader = Reader(bytes)
        guard reader.name(in: dayNames), reader.literal(", "), let day = reader.digits(2), reader.literal(separator),
              let month = reader.month(), reader.literal(separator), let year = reader.digits(yearDigits), reader.literal(" "),
              let time = reader.timeOfDay(), reader.literal(" GMT"), reader.atEnd
        else { return nil }
        return (year, month, day, time)
    }

    /// `Sun Nov  6 08:49:37 1994` (the day space-padded)
    private static func asctime(_ bytes: [UInt8]) -> Date? {
        var reader = Reader(bytes)
        guard reader.name(in: shortDayNames), reader.literal(" "), let month = reader.month(), reader.literal(" ") else {
            return nil
        }
        let day = reader.literal(" ") ? reader.digits(1) : reader.digits(2)
        guard let day, reader.literal(" "), let time = reader.timeOfDay(), reader.literal(" "),
              let year = reader.digits(4), reader.atEnd
        else { return nil }
        return date(year: year, month: month, day: day, time: time)
    }

    private static let shortDayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDayNames = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static let gmtCalendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        return calendar
    }()

    /// The instant, or `nil` for a day the month does not have (31 Feb) or a time out of range (second 60, a leap
    /// second, is the next minute's first).
    private static func date(year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int)) -> Date? {
        guard year >= 1, (1...31).contains(day), time.hour < 24, time.minute < 60, time.second <= 60 else { return nil }
        let components = DateComponents(year: year, month: month, day: day)
        guard let midnight = gmtCalendar.date(from: components),
              gmtCalendar.dateComponents([.year, .month, .day], from: midnight) == components
        else { return nil }
        return midnight.addingTimeInterval(Double(time.hour * 3600 + time.minute * 60 + time.second))
    }

    /// A cursor over the ASCII bytes of one date.
    private struct Reader {
        private let bytes: [UInt8]
        private var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        mutating func literal(_ text: String) -> Bool { consume(text.utf8) }

        mutating func digits(_ count: Int) -> Int? {
            guard bytes.count - index >= count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }

        /// Names are case-sensitive (RFC 9110 §5.6.7).
        mutating func name(in names: [String]) -> Bool { matchIndex(of: names) != nil }

        /// 1…12
        mutating func month() -> Int? { matchIndex(of: HTTPDate.monthNames).map { $0 + 1 } }

        mutating func timeOfDay() -> (hour: Int, minute: Int, second: Int)? {
            guard let hour = digits(2), literal(":"), let minute = digits(2), literal(":"), let second = digits(2) else {
                return nil
            }
            return (hour, minute, second)
        }

        private mutating func matchIndex(of names: [String]) -> Int? {
            names.firstIndex { consume($0.utf8) }
        }

        private mutating func consume(_ expected: String.UTF8View) -> Bool {
            guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
                return false
            }
            index += expected.count
            return true
        }
    }
}
