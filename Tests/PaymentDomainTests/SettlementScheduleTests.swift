import Foundation
import Testing
@testable import PaymentDomain

/// When a captured payment's settlement is queried: after its AUTH's `settleduedate` has passed (00:00 UTC the next
/// day), then every poll interval; without a due date one interval after the capture. Pure.
@Suite struct SettlementScheduleTests {
    static let day = Date(timeIntervalSince1970: 1_767_225_600) // 2026-01-01T00:00:00Z
    static let poll: TimeInterval = 6 * 3600

    @Test(arguments: [
        ("2026-01-01", true), ("2026-02-29", false), ("2024-02-29", true), ("2026-1-01", false), ("2026-01-01T00:00", false),
        ("", false), ("abcd-ef-gh", false), ("２０２６-01-01", false),
    ])
    func dueDatesAreExactlyDates(text: String, valid: Bool) {
        #expect((SettlementSchedule.dueDate(text) != nil) == valid)
    }

    @Test func aDueDatePassesAtTheNextMidnightUTC() {
        #expect(SettlementSchedule.passed("2026-01-01") == Self.day.addingTimeInterval(86_400))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let due: String?
        /// Hours after 2026-01-01T00:00Z.
        let lastQueried: Double?
        let captured: Double
        let now: Double
        let expected: Bool
        var testDescription: String { "due \(due ?? "-") queried \(lastQueried.map { "\($0)h" } ?? "-") captured \(captured)h now \(now)h" }
    }

    @Test(arguments: [
        // Captured at 10:00 on the due date: not before the due date has passed, even one interval after the capture…
        Case(due: "2026-01-01", lastQueried: nil, captured: 10, now: 23, expected: false),
        // …and at once once it has.
        Case(due: "2026-01-01", lastQueried: nil, captured: 10, now: 24, expected: true),
        // Queried since: every interval after the last query.
        Case(due: "2026-01-01", lastQueried: 24, captured: 10, now: 29, expected: false),
        Case(due: "2026-01-01", lastQueried: 24, captured: 10, now: 30, expected: true),
        // A due date long past (a manual capture days after its AUTH): queried at once, then every interval.
        Case(due: "2025-12-01", lastQueried: nil, captured: 10, now: 10, expected: true),
        // No due date: one interval after the capture, as before.
        Case(due: nil, lastQueried: nil, captured: 10, now: 15, expected: false),
        Case(due: nil, lastQueried: nil, captured: 10, now: 16, expected: true),
        Case(due: nil, lastQueried: 20, captured: 10, now: 26, expected: true),
    ])
    func theScheduleDecides(_ test: Case) {
        let hours = { (value: Double) in Self.day.addingTimeInterval(value * 3600) }
        #expect(SettlementSchedule.isDue(now: hours(test.now), dueDate: test.due, lastQueried: test.lastQueried.map(hours),
                                         capturedAt: hours(test.captured), poll: Self.poll) == test.expected)
    }
}
