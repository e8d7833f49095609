import Foundation
import Testing
@testable import PaymentDomain

/// ``Decrypt/decide(_:_:_:now:newID:verify:)``'s decision table, with the token checks replaced by a table of their
/// results: no services, no tokens.
@Suite struct DecryptDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_767_225_600)
    static let clock = VerificationClock(maxQueueAge: 86_400, maxFutureSkew: 60)

    static func job(_ jobId: String, merchant: String = "m1", amount: Int = 1099) -> PaymentJob {
        try! PaymentJob.decode(PaymentJobTests.body(["jobId": jobId, "merchantId": merchant, "amount": ["value": amount, "currency": "GBP"]]))
    }

    static func key(_ jobId: String, merchant: String = "m1") -> Decrypt.JobKey { Decrypt.JobKey(merchantId: merchant, jobId: jobId) }

    static func existing(_ job: PaymentJob, _ status: PaymentStatus, hash: [UInt8]? = nil, firstReceivedAt: Date = now.addingTimeInterval(-600)) -> Decrypt.Existing {
        Decrypt.Existing(id: UUID(), key: key(job.jobId, merchant: job.merchantId), jobHash: hash ?? job.contentHash, status: status,
                         firstReceivedAt: firstReceivedAt)
    }

    /// The stand-in for the token checks: by job id, the `transactionId` the token carries or the rejection it gets;
    /// records every call (job id, instant).
    final class Tokens {
        var results: [String: Result<String, Rejection>] = [:]
        var calls: [(jobId: String, at: Date)] = []

        func verify(_ job: PaymentJob, _ merchant: String, _ at: Date) -> Result<Decrypt.Verified<String>, Rejection> {
            calls.append((job.jobId, at))
            return (results[job.jobId] ?? .success("tx-\(job.jobId)")).map { Decrypt.Verified(transactionId: $0, payload: "card of \(job.jobId) for \(merchant)") }
        }
    }

    static func decide(_ inputs: [DecryptInput], payments: [Decrypt.Existing] = [], claimed: Set<String> = [],
                       merchants: [String: MerchantLookup<String>] = ["m1": .found("m1")], tokens: Tokens = Tokens()) -> [Decrypt.Decision<String>] {
        let rows = Decrypt.Rows(payments: Dictionary(uniqueKeysWithValues: payments.map { ($0.key, $0) }), claimedTransactionIds: claimed,
                                merchants: merchants)
        return Decrypt.decide(rows, inputs, clock, now: now, verify: tokens.verify)
    }

    /// A decision in a comparable form: `create decrypted tx-a`, `create failed code`, `settle …`, `handOff stage id`, `reject code`.
    static func summary(_ decision: Decrypt.Decision<String>, names: [UUID: String] = [:]) -> String {
        func settled(_ settled: Decrypt.Settled<String>) -> String {
            switch settled {
            case .decrypted(let verified): "decrypted \(verified.transactionId)"
            case .failed(let rejection): "failed \(rejection.code)"
            }
        }
        switch decision {
        case .create(let new): return "create \(settled(new.settled))"
        case .settle(_, let outcome): return "settle \(settled(outcome))"
        case .handOff(let handOff): return "handOff \(handOff.stage.rawValue) \(names[handOff.message.paymentId] ?? "?")"
        case .reject(let failure): return "reject \(failure.code)"
        }
    }

    @Test func aNewJobIsCreatedDecryptedAndVerifiedAtNow() throws {
        let tokens = Tokens()
        let decisions = Self.decide([.job(Self.job("a"))], tokens: tokens)
        guard case .create(let new) = try #require(decisions.first), case .decrypted(let verified) = new.settled else {
            Issue.record("not created decrypted: \(decisions)")
            return
        }
        #expect(new.key == Self.key("a") && new.job?.jobId == "a" && new.jobHash == Self.job("a").contentHash)
        #expect(verified.transactionId == "tx-a" && verified.payload == "card of a for m1")
        #expect(tokens.calls.map(\.at) == [Self.now], "the clock is first receipt, which is now")
        #expect(try decisions[0].outcome.get() == HandOff(.authorize, new.message))
    }

    @Test func aPublishTimestampWithinBoundsIsTheClockAndOutsideIsIgnored() {
        let tokens = Tokens()
        let published = Self.now.addingTimeInterval(-3600)
        _ = Self.decide([.job(Self.job("a"), publishedAt: published), .job(Self.job("b"), publishedAt: Self.now.addingTimeInterval(3600))], tokens: tokens)
        #expect(tokens.calls.map(\.at) == [published, Self.now])
    }

    @Test func aDuplicateInTheBatchIsHandledByTheFirst() {
        let tokens = Tokens()
        let decisions = Self.decide([.job(Self.job("a")), .job(Self.job("a"))], tokens: tokens)
        guard case .create(let first) = decisions[0], case .handOff(let later) = decisions[1] else {
            Issue.record("\(decisions.map { Self.summary($0) })")
            return
        }
        #expect(later == HandOff(.authorize, first.message), "the same payment, where the first leaves it")
        #expect(tokens.calls.count == 1, "the token is checked once")
    }

    @Test func aDuplicateOfAFailedJobIsHandedToNotification() throws {
        let tokens = Tokens()
        tokens.results["a"] = .failure(Rejection(code: "signature_invalid", reason: "bad"))
        let decisions = Self.decide([.job(Self.job("a")), .job(Self.job("a"))], tokens: tokens)
        guard case .create(let first) = decisions[0] else { Issue.record("\(decisions)"); return }
        #expect(Self.summary(decisions[0]) == "create failed signature_invalid")
        #expect(try decisions[1].outcome.get() == HandOff(.notify, first.message))
    }

    @Test func aReusedJobIdWithOtherContentConflicts() {
        // Inside the batch: the first decides, the other content is refused.
        let inBatch = Self.decide([.job(Self.job("a")), .job(Self.job("a", amount: 2000))]).map { Self.summary($0) }
        #expect(inBatch == ["create decrypted tx-a", "reject idempotency_conflict"])
        // Against the database, whatever the payment's status; the first payment is untouched (nothing written).
        for status in PaymentStatus.allCases {
            let stored = Self.existing(Self.job("a"), status)
            #expect(Self.decide([.job(Self.job("a", amount: 2000))], payments: [stored]).map { Self.summary($0) } == ["reject idempotency_conflict"])
        }
        // A conflicting message does not stop a later copy of the stored job from finding its payment.
        let stored = Self.existing(Self.job("a"), .decrypted)
        let mixed = Self.decide([.job(Self.job("a", amount: 2000)), .job(Self.job("a"))], payments: [stored])
        #expect(mixed.map { Self.summary($0, names: [stored.id: "a"]) } == ["reject idempotency_conflict", "handOff authorize a"])
        guard case .reject(let failure) = mixed[0] else { return }
        #expect(failure == .unattributable(code: "idempotency_conflict", reason: "job id 'a' of merchant 'm1' was already used for a job with different content"))
    }

    @Test(arguments: [(PaymentStatus.decrypted, Stage.authorize), (.prepared, .submit), (.submitting, .submit), (.authorized, .notify),
                      (.declined, .notify), (.failed, .notify), (.needsReview, .notify)])
    func aRedeliveryOfAnAdvancedPaymentIsHandedToWhereItIs(status: PaymentStatus, stage: Stage) {
        let tokens = Tokens()
        let stored = Self.existing(Self.job("a"), status)
        let decisions = Self.decide([.job(Self.job("a")), .job(Self.job("a"))], payments: [stored], tokens: tokens)
        #expect(decisions.map { Self.summary($0, names: [stored.id: "a"]) } == ["handOff \(stage.rawValue) a", "handOff \(stage.rawValue) a"])
        #expect(tokens.calls.isEmpty, "nothing is verified again")
    }

    @Test func aPaymentFoundStillReceivedIsSettledAtItsFirstReceivedTime() {
        let tokens = Tokens()
        let firstReceived = Self.now.addingTimeInterval(-120)
        let stored = Self.existing(Self.job("a"), .received, firstReceivedAt: firstReceived)
        let decisions = Self.decide([.job(Self.job("a")), .job(Self.job("a"))], payments: [stored], tokens: tokens)
        #expect(decisions.map { Self.summary($0, names: [stored.id: "a"]) } == ["settle decrypted tx-a", "handOff authorize a"])
        #expect(tokens.calls.map(\.at) == [firstReceived])
    }

    @Test func aTokenFailureCreatesAFailedPaymentWithItsCode() {
        let tokens = Tokens()
        for code in ["signature_invalid", "amount_mismatch", "application_data_mismatch", "unknown_merchant_key"] {
            tokens.results[code] = .failure(Rejection(code: code, reason: "reason of \(code)"))
        }
        let decisions = Self.decide(tokens.results.keys.sorted().map { .job(Self.job($0)) }, tokens: tokens)
        #expect(decisions.map { Self.summary($0) } == tokens.results.keys.sorted().map { "create failed \($0)" })
        for decision in decisions {
            guard case .create(let new) = decision, case .failed(let rejection) = new.settled else { continue }
            #expect(rejection.reason == "reason of \(rejection.code)")
            #expect(new.job != nil, "a failed job keeps its fields")
            #expect((try? decision.outcome.get())?.stage == .notify)
        }
    }

    @Test func aReplayedTransactionIdFailsInsideTheBatchAndAgainstTheDatabase() {
        let tokens = Tokens()
        tokens.results = ["a": .success("shared"), "b": .success("shared"), "c": .success("claimed"),
                          "d": .failure(Rejection(code: "signature_invalid", reason: "bad"))]
        let decisions = Self.decide(["a", "b", "c", "d"].map { .job(Self.job($0)) }, claimed: ["claimed"], tokens: tokens)
        #expect(decisions.map { Self.summary($0) } == [
            "create decrypted shared", "create failed token_replayed", "create failed token_replayed", "create failed signature_invalid",
        ])
        // The token checks come first: a bad token is reported as bad, even when its id was also seen.
        tokens.results["d"] = .failure(Rejection(code: "signature_invalid", reason: "bad"))
        let replayedAndBad = Self.decide([.job(Self.job("d"))], claimed: ["tx-d"], tokens: tokens)
        #expect(replayedAndBad.map { Self.summary($0) } == ["create failed signature_invalid"])
    }

    @Test func anUnknownOrUnusableMerchantFailsEachOfItsMessages() {
        let tokens = Tokens()
        let unusable = StageFailure.transient(code: "internal_error", reason: "MerchantIdentityError")
        let decisions = Self.decide(
            [.job(Self.job("a", merchant: "nobody")), .job(Self.job("a", merchant: "nobody")), .job(Self.job("b", merchant: "broken")),
             .job(Self.job("c"))],
            merchants: ["m1": .found("m1"), "broken": .unavailable(unusable)], tokens: tokens)
        #expect(decisions.map { Self.summary($0) } == ["reject unknown_merchant", "reject unknown_merchant", "reject internal_error", "create decrypted tx-c"])
        #expect(tokens.calls.map(\.jobId) == ["c"])
        guard case .reject(let failure) = decisions[0] else { return }
        #expect(failure == .unattributable(code: "unknown_merchant", reason: "merchant 'nobody' is not configured"))
    }

    @Test func anInvalidJobIsCreatedFailedWithOnlyItsKey() throws {
        let invalid = DecryptInput.invalid(merchantId: "m1", jobId: "bad", contentHash: [1, 2, 3], reason: "amount.value must be an integer")
        let decisions = Self.decide([invalid, invalid, .invalid(merchantId: "m1", jobId: "bad", contentHash: [9], reason: "other")])
        guard case .create(let new) = decisions[0], case .failed(let rejection) = new.settled else {
            Issue.record("\(decisions)")
            return
        }
        #expect(new.job == nil && new.jobHash == [1, 2, 3] && new.key == Self.key("bad"))
        #expect(rejection == Rejection(code: "invalid_job", reason: "amount.value must be an integer"))
        #expect(try decisions[1].outcome.get() == HandOff(.notify, new.message))
        #expect(Self.summary(decisions[2]) == "reject idempotency_conflict")
    }

    /// An invalid job's `failed` payment keeps its delivery's trace context as a usable job's payment does, so a
    /// re-drive from its row continues the job's trace (docs/observability.md).
    @Test func anInvalidJobsPaymentKeepsItsTraceContext() throws {
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let invalid = DecryptInput.invalid(merchantId: "m1", jobId: "bad", contentHash: [1], reason: "no amount",
                                           traceparent: traceparent, tracestate: "vendor=abc")
        var job = Self.job("good")
        (job.traceparent, job.tracestate) = (traceparent, nil)
        let decisions = Self.decide([invalid, .job(job), .invalid(merchantId: "m1", jobId: "untraced", contentHash: [2], reason: "no amount")])
        let created = decisions.compactMap { decision -> Decrypt.NewPayment<String>? in
            if case .create(let new) = decision { new } else { nil }
        }
        #expect(created.map(\.traceparent) == [traceparent, traceparent, nil])
        #expect(created.map(\.tracestate) == ["vendor=abc", nil, nil])
        #expect(created[0].map { $0 + "!" }.traceparent == traceparent, "sealing the payload keeps the trace")
    }

    @Test func newPaymentsGetTheirOwnIdsAndTheOutcomesFollowTheMessages() {
        let expected = [UUID(), UUID()]
        var generator = expected.makeIterator()
        let rows = Decrypt.Rows<String>(merchants: ["m1": .found("m1")])
        let decisions = Decrypt.decide(rows, [.job(Self.job("a")), .job(Self.job("b")), .job(Self.job("a"))], Self.clock, now: Self.now,
                                       newID: { generator.next()! }, verify: Tokens().verify)
        #expect(decisions.map { try? $0.outcome.get().message.paymentId } == [expected[0], expected[1], expected[0]])
        #expect(decisions.map(\.writes) == [true, true, false])
    }
}
