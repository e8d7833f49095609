import Testing
@testable import Pipeline

/// The store's statements bind only checked transitions: these run without services.
@Suite struct CheckedTransitionTests {
    @Test(arguments: PaymentStatus.allCases)
    func exactlyTheStateMachinesSuccessorsAreAccepted(from: PaymentStatus) {
        for to in PaymentStatus.allCases {
            let checked = try? CheckedTransition(from: from, to: to)
            #expect((checked != nil) == PaymentStateMachine.successors(of: from).contains(to), "\(from) → \(to)")
        }
    }

    @Test func anIllegalTransitionNamesBothEnds() {
        let error = #expect(throws: PaymentStateMachine.IllegalTransition.self) {
            try CheckedTransition(from: .authorized, to: .prepared)
        }
        #expect(error?.from == .authorized && error?.to == .prepared)
    }

    @Test func theBoundStageFollowsTheNewStatus() throws {
        #expect(try CheckedTransition(from: .received, to: .decrypted).stage == .authorize)
        #expect(try CheckedTransition(from: .decrypted, to: .prepared).stage == .submit)
        #expect(try CheckedTransition(from: .submitting, to: .authorized).stage == .notify)
        #expect(try CheckedTransition(from: .submitting, to: .prepared).stage == .submit)
    }

    @Test func creationIsTheInitialStatusWithNoPredecessor() {
        #expect(CheckedTransition.creation.from == nil)
        #expect(CheckedTransition.creation.to == .received)
        #expect(CheckedTransition.creation.stage == .decrypt)
    }

    @Test func aSetBasedBatchIsCheckedRowByRowAndRefusedWhole() throws {
        let legal = try CheckedTransition.checkEach([(.submitting, .authorized), (.submitting, .declined), (.prepared, .failed)])
        #expect(legal.map(\.to) == [.authorized, .declined, .failed])
        let error = #expect(throws: PaymentStateMachine.IllegalTransition.self) {
            try CheckedTransition.checkEach([(.submitting, .authorized), (.declined, .authorized)])
        }
        #expect(error?.from == .declined && error?.to == .authorized)
    }
}
