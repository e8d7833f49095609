import Crypto
import Foundation

/// When a captured payment's settlement is queried, at a connector that polls it (docs/operations-lifecycle.md): not
/// before the AUTH's `settleduedate` has passed (the gateway settles in its run of that day), then every
/// `PAYPIPE_SETTLEMENT_POLL` until the settle status is 100 or 3. Pure.
///
/// `settleduedate` is a date (`"2025-01-01"`, docs/connectors.md); its time zone is [UNCONFIRMED], so the
/// due date counts as passed at 00:00 UTC of the next day. Without one (another gateway's answer, an AUTH recorded
/// before it was kept), the first query is one interval after the capture, as before.
public enum SettlementSchedule {
    /// The due date of a `settleduedate` text, nil unless it is exactly `YYYY-MM-DD` of a real date.
    public static func dueDate(_ text: String?) -> String? {
        guard let text, text.utf8.count == 10, passed(text) != nil else { return nil }
        return text
    }

    /// 00:00 UTC of the day after `date` (`YYYY-MM-DD`): when the due date has passed.
    public static func passed(_ date: String) -> Date? {
        let parts = date.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]) else { return nil }
        // A real date is one the civil-date arithmetic maps back to itself (no 2025-02-30). Read on every AUTH answer,
        // so no Calendar or TimeZone is built here.
        let days = ASN1Time.daysFromCivil(year: year, month: month, day: day)
        guard (1...12).contains(month), (1...31).contains(day), ASN1Time.civil(fromDays: days) == (year, month, day) else { return nil }
        return Date(timeIntervalSince1970: Double(days + 1) * 86_400)
    }

    /// When the settlement of a payment captured (or last changed) at `capturedAt` is next queried: after the due date
    /// has passed, and `poll` seconds after the last query (or, never queried and without a due date, after the
    /// capture).
    public static func nextQuery(dueDate: String?, lastQueried: Date?, capturedAt: Date, poll: TimeInterval) -> Date {
        let due = dueDate.flatMap(passed)
        if let lastQueried {
            return max(lastQueried.addingTimeInterval(poll), due ?? .distantPast)
        }
        return due ?? capturedAt.addingTimeInterval(poll)
    }

    public static func isDue(now: Date, dueDate: String?, lastQueried: Date?, capturedAt: Date, poll: TimeInterval) -> Bool {
        now >= nextQuery(dueDate: dueDate, lastQueried: lastQueried, capturedAt: capturedAt, poll: poll)
    }
}
