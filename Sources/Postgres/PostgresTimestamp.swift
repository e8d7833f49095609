/// Text coding of `timestamptz` with microsecond precision, without `DateFormatter`.
///
/// Formatting always writes UTC (`2024-05-01 12:00:00.123000+00`). Parsing reads the ISO output of any session
/// time zone (`+05:30`, `-03:30`, seconds offsets, ` BC`), so results stay correct even if a statement changes
/// `TimeZone`; `timestamp` (no zone) is read as UTC and `date` as midnight UTC. `infinity` and `-infinity` map to
/// `Date.distantFuture` and `Date.distantPast`.
enum PostgresTimestamp {
    private static let microsPerSecond: Int64 = 1_000_000
    private static let microsPerDay: Int64 = 86_400 * 1_000_000

    /// Microseconds since 1970-01-01 00:00 UTC, rounded to the nearest microsecond (PostgreSQL's resolution).
    static func micros(of seconds: Double) -> Int64 {
        Int64((seconds * Double(microsPerSecond)).rounded())
    }

    static func format(microsSince1970 micros: Int64, into buffer: inout [UInt8]) {
        let days = floorDivide(micros, microsPerDay)
        var remainder = micros - days * microsPerDay
        let (year, month, day) = civil(fromDays: days)
        let hour = remainder / 3_600_000_000
        remainder -= hour * 3_600_000_000
        let minute = remainder / 60_000_000
        remainder -= minute * 60_000_000
        let second = remainder / microsPerSecond
        let fraction = remainder - second * microsPerSecond
        // Year 0 is 1 BC in PostgreSQL's (proleptic Gregorian, no year zero) calendar.
        let isBC = year <= 0
        append(isBC ? 1 - year : year, width: 4, to: &buffer)
        buffer.append(UInt8(ascii: "-"))
        append(month, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: "-"))
        append(day, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: " "))
        append(hour, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
        append(minute, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
        append(second, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: "."))
        append(fraction, width: 6, to: &buffer)
        buffer.append(contentsOf: "+00".utf8)
        if isBC { buffer.append(contentsOf: " BC".utf8) }
    }

    enum ParseResult: Equatable {
        case micros(Int64)
        case infinity
        case negativeInfinity
    }

    /// Parses `YYYY-MM-DD[ HH:MM:SS[.ffffff]][±HH[:MM[:SS]]][ BC]`; nil when the text is not in that form.
    static func parse(_ text: ArraySlice<UInt8>) -> ParseResult? {
        if text.elementsEqual("infinity".utf8) { return .infinity }
        if text.elementsEqual("-infinity".utf8) { return .negativeInfinity }
        var scanner = Scanner(bytes: text)
        guard let rawYear = scanner.number(minDigits: 4, maxDigits: 9), scanner.skip("-"),
              let month = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip("-"),
              let day = scanner.number(minDigits: 2, maxDigits: 2),
              (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var secondsOfDay: Int64 = 0
        var fraction: Int64 = 0
        var offsetSeconds: Int64 = 0
        if scanner.skip(" ") || scanner.skip("T"), let hour = scanner.number(minDigits: 2, maxDigits: 2) {
            guard scanner.skip(":"), let minute = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(":"),
                  let second = scanner.number(minDigits: 2, maxDigits: 2),
                  hour <= 24, minute <= 59, second <= 60
            else { return nil }
            secondsOfDay = (hour * 60 + minute) * 60 + second
            if scanner.skip(".") {
                let start = scanner.index
                guard let digits = scanner.number(minDigits: 1, maxDigits: 6) else { return nil }
                let count = scanner.index - start
                fraction = digits
                for _ in count..<6 { fraction *= 10 }
            }
            if let sign = scanner.sign() {
                guard let offsetHours = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
                var offset = offsetHours * 3_600
                if scanner.skip(":") {
                    guard let offsetMinutes = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
                    offset += offsetMinutes * 60
                    if scanner.skip(":") {
                        guard let offsetSecs = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
                        offset += offsetSecs
                    }
                }
                offsetSeconds = sign * offset
            }
        }
        let year = scanner.skip(" BC") ? 1 - rawYear : rawYear
        guard scanner.isAtEnd else { return nil }
        let days = days(fromCivil: year, month, day)
        let seconds = days * 86_400 + secondsOfDay - offsetSeconds
        return .micros(seconds * microsPerSecond + fraction)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (inverse of `days(fromCivil:)`).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let quotient = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient
    }

    private static func append(_ value: Int64, width: Int, to buffer: inout [UInt8]) {
        let digits = Array(String(value).utf8)
        if digits.count < width {
            buffer.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits.count))
        }
        buffer.append(contentsOf: digits)
    }

    /// A cursor over ASCII text.
    private struct Scanner {
        let bytes: ArraySlice<UInt8>
        var index: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            self.index = bytes.startIndex
        }

        var isAtEnd: Bool { index == bytes.endIndex }

        mutating func skip(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard bytes.endIndex - index >= count else { return false }
            let matches = literal.withUTF8Buffer { bytes[index..<index + count].elementsEqual($0) }
            if matches { index += count }
            return matches
        }

        mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
            var value: Int64 = 0
            var count = 0
            while index < bytes.endIndex, count < maxDigits, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
                index += 1
                count += 1
            }
            return count >= minDigits ? value : nil
        }

        mutating func sign() -> Int64? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }
    }
}
