import Foundation
import Testing
@testable import PaymentDomain

/// ``Authorize/decide(_:_:merchants:now:build:)``'s decision table, with the claims builder replaced by a table of its
/// results: no services.
@Suite struct AuthorizeDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_767_225_600)

    static func payment(_ status: PaymentStatus, merchant: String = "m1", label: String) -> Authorize.Locked<String> {
        Authorize.Locked(id: UUID(), merchantId: merchant, jobId: "job-\(label)", status: status, row: label)
    }

    /// The stand-in for the claims builder: by row label, what it makes; records every call.
    final class Builder {
        var results: [String: Authorize.Built<String>] = [:]
        var calls: [(label: String, merchant: String?, at: Date)] = []

        func build(_ payment: Authorize.Locked<String>, _ merchant: String?, _ at: Date) -> Authorize.Built<String> {
            calls.append((payment.row, merchant, at))
            return results[payment.row] ?? .request("request of \(payment.row)")
        }
    }

    static func decide(_ payments: [Authorize.Locked<String>], _ messages: [StageMessage],
                       merchants: [String: MerchantLookup<String>] = ["m1": .found("m1")], builder: Builder = Builder()) -> [String] {
        let rows = Dictionary(uniqueKeysWithValues: payments.map { ($0.id, $0) })
        let labels = Dictionary(uniqueKeysWithValues: payments.map { ($0.id, $0.row) })
        return Authorize.decide(rows, messages, merchants: merchants, now: now, build: builder.build).map { decision in
            switch decision {
            case .prepare(let message, let request): "prepare \(labels[message.paymentId] ?? "?") \(request)"
            case .fail(let message, let rejection): "fail \(labels[message.paymentId] ?? "?") \(rejection.code)"
            case .handOff(let handOff): "handOff \(handOff.stage.rawValue) \(labels[handOff.message.paymentId] ?? "?")"
            case .reject(let failure): "reject \(failure.code)"
            case .awaitAmount(let message, let park): "await \(labels[message.paymentId] ?? "?") \(park ? "park" : "waits")"
            }
        }
    }

    /// A deferred payment (its amount not given yet) is parked once and handed to notify (`payment.awaiting_amount`), and
    /// is never built again while it waits: a second message in the batch, or a redelivery, writes nothing.
    @Test func aDeferredPaymentWaitsForItsAmount() {
        let builder = Builder()
        builder.results["a"] = .awaitingAmount
        let parked = Self.payment(.decrypted, label: "a")
        let waiting = Self.payment(.awaitingAmount, label: "b")
        #expect(Self.decide([parked, waiting], [parked.message, parked.message, waiting.message], builder: builder)
            == ["await a park", "await a waits", "await b waits"])
        #expect(builder.calls.map(\.label) == ["a"])
        let decisions = Authorize.decide([parked.id: parked], [parked.message], merchants: ["m1": .found("m1")], now: Self.now, build: builder.build)
        #expect(decisions.map { try? $0.outcome.get() } == [HandOff(.notify, parked.message)])
    }

    @Test func aDecryptedPaymentIsPreparedWithItsRequestBuiltAtNow() {
        let builder = Builder()
        let payment = Self.payment(.decrypted, label: "a")
        #expect(Self.decide([payment], [payment.message], builder: builder) == ["prepare a request of a"])
        #expect(builder.calls.map(\.merchant) == ["m1"] && builder.calls.map(\.at) == [Self.now])
    }

    @Test func theOutcomesOfEachDecision() throws {
        let payment = Self.payment(.decrypted, label: "a")
        let decisions = Authorize.decide([payment.id: payment], [payment.message], merchants: ["m1": .found("m1")], now: Self.now) {
            _, _, _ in Authorize.Built<String>.rejected(Rejection(code: "invalid_currency", reason: "EUR"))
        }
        #expect(try decisions[0].outcome.get() == HandOff(.notify, payment.message))
        let none: [String: MerchantLookup<String>] = [:]
        let prepared = Authorize.decide([payment.id: payment], [payment.message], merchants: none, now: Self.now) { _, _, _ in Authorize.Built<Int>.request(1) }
        #expect(try prepared[0].outcome.get() == HandOff(.submit, payment.message))
    }

    @Test func aValidationErrorFailsThePaymentAndAnOutsideErrorFailsTheMessage() {
        let builder = Builder()
        builder.results = ["currency": .rejected(Rejection(code: "invalid_currency", reason: "EUR is not the token's")),
                           "vault": .unavailable(.transient(code: "internal_error", reason: "VaultError"))]
        let payments = ["currency", "vault"].map { Self.payment(.decrypted, label: $0) }
        #expect(Self.decide(payments, payments.map(\.message), builder: builder) == ["fail currency invalid_currency", "reject internal_error"])
    }

    @Test func anUnknownOrNotYetDecryptedPaymentFailsTheMessage() {
        let received = Self.payment(.received, label: "received")
        let unknown = StageMessage(paymentId: UUID(), merchantId: "m1", jobId: "job-x")
        let builder = Builder()
        #expect(Self.decide([received], [unknown, received.message, received.message], builder: builder) == [
            "reject unknown_payment", "reject payment_not_decrypted", "reject payment_not_decrypted",
        ])
        #expect(builder.calls.isEmpty)
    }

    @Test(arguments: [(PaymentStatus.prepared, Stage.submit), (.submitting, .submit), (.authorized, .notify), (.declined, .notify),
                      (.failed, .notify), (.needsReview, .notify)])
    func aRedeliveryOfAnAdvancedPaymentIsHandedToWhereItIs(status: PaymentStatus, stage: Stage) {
        let builder = Builder()
        let payment = Self.payment(status, label: "a")
        #expect(Self.decide([payment], [payment.message], builder: builder) == ["handOff \(stage.rawValue) a"])
        #expect(builder.calls.isEmpty, "nothing is built again")
    }

    @Test func aPaymentRepeatedInTheBatchIsDecidedByItsFirstMessage() {
        let builder = Builder()
        builder.results["bad"] = .rejected(Rejection(code: "card_data_missing", reason: "none"))
        let good = Self.payment(.decrypted, label: "good")
        let bad = Self.payment(.decrypted, label: "bad")
        #expect(Self.decide([good, bad], [good.message, bad.message, good.message, bad.message], builder: builder) == [
            "prepare good request of good", "fail bad card_data_missing", "handOff submit good", "handOff notify bad",
        ])
        #expect(builder.calls.map(\.label) == ["good", "bad"], "each built once")
    }

    @Test func theMerchantIsLookedUpButAnUnknownOneIsTheBuildersToReject() {
        let builder = Builder()
        let unknown = Self.payment(.decrypted, merchant: "nobody", label: "unknown")
        let broken = Self.payment(.decrypted, merchant: "broken", label: "broken")
        let decisions = Self.decide([unknown, broken], [unknown.message, broken.message],
                                    merchants: ["broken": .unavailable(.transient(code: "internal_error", reason: "bad key"))], builder: builder)
        #expect(decisions == ["prepare unknown request of unknown", "reject internal_error"])
        #expect(builder.calls.count == 1 && builder.calls[0].merchant == nil, "built without a merchant: merchant_not_configured is the builder's")
    }
}
