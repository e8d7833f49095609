import Foundation
import Testing
@testable import PaymentDomain

/// A deferred payment's completion and expiry (``DeferredAmount``, ``CompletionRequest``): decided with an injected
/// clock, never a sleep.
@Suite struct DeferredAmountTests {
    static let received = Date(timeIntervalSince1970: 1_800_000_000)
    static let day: TimeInterval = 86_400
    static let lifetime: TimeInterval = 30 * 86_400
    static let id = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!

    static func waiting(_ status: PaymentStatus = .awaitingAmount, amount: Int64 = 500_000, completedAt: Date? = nil) -> DeferredAmount.Snapshot {
        DeferredAmount.Snapshot(merchantId: "m1", jobId: "j1", status: status, amountMinor: amount, completedAt: completedAt, receivedAt: received)
    }

    static func body(_ object: [String: Any]) -> [UInt8] { Array(try! JSONSerialization.data(withJSONObject: object)) }

    @Test func completionRequestIsStrict() throws {
        let good: [String: Any] = ["operationId": "complete-1", "merchantId": "m1", "paymentId": Self.id.uuidString, "amount": 120_000]
        let request = try CompletionRequest.decode(Self.body(good))
        #expect(request == CompletionRequest(operationId: "complete-1", merchantId: "m1", paymentId: Self.id, amount: 120_000))
        for (member, bad) in [("amount", nil), ("amount", 0), ("amount", "120000"), ("amount", 1.5), ("amount", 100_000_000_000 as Int64),
                              ("paymentId", "not-a-uuid"), ("paymentId", nil)] as [(String, Any?)] {
            var object = good
            object[member] = bad
            do {
                _ = try CompletionRequest.decode(Self.body(object))
                Issue.record("accepted \(member)=\(String(describing: bad))")
            } catch {
                guard case .invalid(let merchant, let operation, let reason) = error else { Issue.record("unaddressed: \(error)"); continue }
                #expect(merchant == "m1" && operation == "complete-1" && reason.contains(member))
            }
        }
        var anonymous = good
        anonymous["merchantId"] = nil
        #expect(throws: OperationRequest.DecodingError.self) { try CompletionRequest.decode(Self.body(anonymous)) }
    }

    @Test func aWaitingPaymentIsCompletedWithinItsLifetime() {
        // A day later, and up to the last second of the 30 days.
        for age in [Self.day, Self.lifetime - 1] {
            #expect(DeferredAmount.complete(Self.waiting(), merchantId: "m1", amount: 120_000, now: Self.received + age, lifetime: Self.lifetime)
                == .complete(amount: 120_000))
        }
        // The job's amount is the ceiling, itself allowed.
        #expect(DeferredAmount.complete(Self.waiting(), merchantId: "m1", amount: 500_000, now: Self.received + Self.day, lifetime: Self.lifetime)
            == .complete(amount: 500_000))
        guard case .refuse("amount_exceeds_maximum", _) = DeferredAmount.complete(
            Self.waiting(), merchantId: "m1", amount: 500_001, now: Self.received + Self.day, lifetime: Self.lifetime) else {
            Issue.record("an amount above the job's was accepted")
            return
        }
    }

    @Test func anExpiredPaymentIsFailedNotCompleted() {
        for age in [Self.lifetime, Self.lifetime + Self.day] {
            #expect(DeferredAmount.complete(Self.waiting(), merchantId: "m1", amount: 120_000, now: Self.received + age, lifetime: Self.lifetime) == .expire)
        }
        #expect(!DeferredAmount.hasExpired(receivedAt: Self.received, now: Self.received + Self.lifetime - 0.001, lifetime: Self.lifetime))
        #expect(DeferredAmount.hasExpired(receivedAt: Self.received, now: Self.received + Self.lifetime, lifetime: Self.lifetime))
    }

    @Test func onlyAWaitingPaymentOfTheMerchantIsCompleted() {
        let now = Self.received + Self.day
        func code(_ completion: DeferredAmount.Completion) -> String? {
            switch completion {
            case .wait(let code, _), .refuse(let code, _): code
            default: nil
            }
        }
        #expect(code(DeferredAmount.complete(nil, merchantId: "m1", amount: 1, now: now, lifetime: Self.lifetime)) == "operation_payment_unknown")
        // Another merchant's payment is as unknown as none.
        #expect(code(DeferredAmount.complete(Self.waiting(), merchantId: "m2", amount: 1, now: now, lifetime: Self.lifetime)) == "operation_payment_unknown")
        for status in [PaymentStatus.received, .decrypted] {
            #expect(code(DeferredAmount.complete(Self.waiting(status), merchantId: "m1", amount: 1, now: now, lifetime: Self.lifetime)) == "completion_too_early")
        }
        for status in [PaymentStatus.prepared, .submitting, .authorized, .declined, .failed, .needsReview] {
            #expect(code(DeferredAmount.complete(Self.waiting(status), merchantId: "m1", amount: 1, now: now, lifetime: Self.lifetime)) == "payment_not_awaiting_amount")
        }
        // A connector without deferred amounts.
        #expect(code(DeferredAmount.complete(Self.waiting(), merchantId: "m1", amount: 1, now: now, lifetime: nil)) == "payment_not_awaiting_amount")
    }

    /// A completion repeated (a redelivery, or the same amount under another operation id) never completes twice.
    @Test func aRepeatedCompletionChangesNothing() {
        let now = Self.received + Self.day
        let completed = Self.waiting().completed(amount: 120_000, at: now)
        #expect(completed.status == .decrypted && completed.amountMinor == 120_000)
        #expect(DeferredAmount.complete(completed, merchantId: "m1", amount: 120_000, now: now, lifetime: Self.lifetime) == .repeated(handOff: true))
        let sent = Self.waiting(.authorized, amount: 120_000, completedAt: now)
        #expect(DeferredAmount.complete(sent, merchantId: "m1", amount: 120_000, now: now + Self.lifetime, lifetime: Self.lifetime) == .repeated(handOff: false))
        guard case .refuse("payment_not_awaiting_amount", _) = DeferredAmount.complete(completed, merchantId: "m1", amount: 130_000, now: now, lifetime: Self.lifetime) else {
            Issue.record("a second completion with another amount was not refused")
            return
        }
    }

    @Test func theSweepExpiresByEachMerchantsLifetime() {
        let message = { (merchant: String) in StageMessage(paymentId: UUID(), merchantId: merchant, jobId: "j") }
        let old = message("tappay"), young = message("tappay"), unknown = message("gone")
        let waiting = [(message: old, receivedAt: Self.received), (message: young, receivedAt: Self.received + 2 * Self.day),
                       (message: unknown, receivedAt: Self.received)]
        let now = Self.received + Self.lifetime + Self.day
        #expect(DeferredAmount.expired(waiting, now: now) { $0 == "tappay" ? Self.lifetime : nil } == [old])
        #expect(DeferredAmount.expired(waiting, now: Self.received + Self.lifetime - 1) { _ in Self.lifetime }.isEmpty)
    }
}
