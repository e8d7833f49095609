import Foundation

/// A UTCTime/GeneralizedTime instant with whole-second precision.
///
/// Conversion is done arithmetically (days from civil date) instead of through `Calendar`, which is both slow and
/// locale-sensitive; only the "Z" forms required by DER are accepted.
public struct ASN1Time: Hashable, Sendable, Comparable {
    public let secondsSince1970: Int64

    public init(secondsSince1970: Int64) {
        self.secondsSince1970 = secondsSince1970
    }

    public init(_ date: Date) {
        self.secondsSince1970 = Int64(date.timeIntervalSince1970.rounded(.down))
    }

    public var date: Date { Date(timeIntervalSince1970: TimeInterval(secondsSince1970)) }

    public static func < (lhs: ASN1Time, rhs: ASN1Time) -> Bool { lhs.secondsSince1970 < rhs.secondsSince1970 }

    /// `YYMMDDHHMMSSZ`; years 50–99 are 19xx (RFC 5280 §4.1.2.5.1).
    init(utcTime content: ArraySlice<UInt8>) throws(CryptoError) {
        let digits = try Self.digits(content, count: 12)
        let yy = digits[0] * 10 + digits[1]
        try self.init(year: yy >= 50 ? 1900 + yy : 2000 + yy, digits: digits[2...])
    }

    /// `YYYYMMDDHHMMSSZ`.
    init(generalizedTime content: ArraySlice<UInt8>) throws(CryptoError) {
        let digits = try Self.digits(content, count: 14)
        let year = digits[0] * 1000 + digits[1] * 100 + digits[2] * 10 + digits[3]
        try self.init(year: year, digits: digits[4...])
    }

    private init(year: Int, digits: ArraySlice<Int>) throws(CryptoError) {
        let d = Array(digits)
        let month = d[0] * 10 + d[1], day = d[2] * 10 + d[3]
        let hour = d[4] * 10 + d[5], minute = d[6] * 10 + d[7], second = d[8] * 10 + d[9]
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else {
            throw .decodingFailed("time out of range")
        }
        let days = Self.daysFromCivil(year: year, month: month, day: day)
        self.secondsSince1970 = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    private static func digits(_ content: ArraySlice<UInt8>, count: Int) throws(CryptoError) -> [Int] {
        guard content.count == count + 1, content.last == UInt8(ascii: "Z") else {
            throw .decodingFailed("time must be in the form …Z")
        }
        var result: [Int] = []
        result.reserveCapacity(count)
        for byte in content.dropLast() {
            guard byte >= 0x30, byte <= 0x39 else { throw .decodingFailed("non-digit in time") }
            result.append(Int(byte - 0x30))
        }
        return result
    }

    /// Howard Hinnant's days_from_civil: days since 1970-01-01 of a proleptic Gregorian date (no range check).
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Inverse of `daysFromCivil`.
    public static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// DER encoding: UTCTime for 1950–2049, GeneralizedTime otherwise (RFC 5280 §4.1.2.5).
    public var derEncoded: [UInt8] {
        let days = Int(secondsSince1970 >= 0 ? secondsSince1970 / 86_400 : (secondsSince1970 - 86_399) / 86_400)
        let secondsOfDay = Int(secondsSince1970 - Int64(days) * 86_400)
        let (year, month, day) = Self.civil(fromDays: days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let tail = two(month) + two(day) + two(secondsOfDay / 3600) + two(secondsOfDay / 60 % 60) + two(secondsOfDay % 60) + "Z"
        if (1950...2049).contains(year) {
            return DERWriter.element(tag: ASN1Tag.utcTime, content: Array((two(year % 100) + tail).utf8))
        }
        // GeneralizedTime's year is always four digits: years 0–999 (which `init(generalizedTime:)` reads) must be
        // zero-padded or the encoding would not parse back (found by the fuzz harness's round-trip check).
        let yearDigits = String(year)
        let paddedYear = String(repeating: "0", count: max(0, 4 - yearDigits.count)) + yearDigits
        return DERWriter.element(tag: ASN1Tag.generalizedTime, content: Array((paddedYear + tail).utf8))
    }
}
