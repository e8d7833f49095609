import Testing
@testable import PaymentDomain

@Suite struct PaymentStateMachineTests {
    @Test func happyPathIsLegal() throws {
        let path: [PaymentStatus] = [.received, .decrypted, .prepared, .submitting, .authorized]
        for (from, to) in zip(path, path.dropFirst()) {
            try PaymentStateMachine.validate(from: from, to: to)
        }
    }

    @Test(arguments: [PaymentStatus.authorized, .declined])
    func finalStatusesHaveNoSuccessors(status: PaymentStatus) {
        #expect(PaymentStateMachine.successors(of: status).isEmpty)
        #expect(status.isTerminal)
    }

    @Test func aFailedPaymentOnlyGoesToReviewOnALateAuthorisation() {
        #expect(PaymentStatus.failed.isTerminal)
        #expect(PaymentStateMachine.successors(of: .failed) == [.needsReview])
    }

    @Test func needsReviewIsTerminalButResolvableByAnOperator() {
        #expect(PaymentStatus.needsReview.isTerminal)
        #expect(PaymentStateMachine.successors(of: .needsReview) == [.authorized, .declined, .failed])
    }

    @Test func noStatusGoesBackwardsExceptAnUnsentRetry() {
        // The only backward edge: a submission the gateway confirmed it never received may be prepared again.
        // (An operator resolving `needs_review` is a separate, manual path.)
        let order = PaymentStatus.allCases
        var backwards: [(PaymentStatus, PaymentStatus)] = []
        for from in order where from != .needsReview {
            for to in PaymentStateMachine.successors(of: from) where order.firstIndex(of: to)! < order.firstIndex(of: from)! {
                backwards.append((from, to))
            }
        }
        // And a deferred payment's completion: its amount given, it goes back to authorize to be built and sent.
        #expect(backwards.map { "\($0.0.rawValue)→\($0.1.rawValue)" } == ["awaiting_amount→decrypted", "submitting→prepared"])
    }

    @Test func illegalTransitionNamesBothStatuses() {
        #expect(throws: PaymentStateMachine.IllegalTransition(from: .authorized, to: .failed)) {
            try PaymentStateMachine.validate(from: .authorized, to: .failed)
        }
        #expect(PaymentStateMachine.IllegalTransition(from: .received, to: .authorized).description.contains("received → authorized"))
    }

    @Test func everyNonTerminalStatusCanFail() {
        for status in PaymentStatus.allCases where !status.isTerminal {
            #expect(PaymentStateMachine.canTransition(from: status, to: .failed), "\(status) cannot fail")
        }
    }

    @Test func statusDeterminesStage() {
        #expect(PaymentStatus.received.stage == .decrypt)
        #expect(PaymentStatus.decrypted.stage == .authorize)
        #expect(PaymentStatus.submitting.stage == .submit)
        #expect(PaymentStatus.needsReview.stage == .notify)
        #expect(PaymentStatus.needsReview.rawValue == "needs_review")
        // Starting to wait for its amount, a payment goes to notify (`payment.awaiting_amount`), then waits in no
        // queue: the operations worker moves it on.
        #expect(PaymentStatus.awaitingAmount.stage == .notify && !PaymentStatus.awaitingAmount.isTerminal)
        #expect(PaymentStateMachine.successors(of: .awaitingAmount) == [.decrypted, .failed])
    }
}
