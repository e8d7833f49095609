import Foundation
@testable import PaymentStages
import Testing

/// Input checks of an operator's resolution of a `needs_review` payment.
@Suite struct PaymentResolutionTests {
    @Test func acceptsOnlyFinalOutcomesWithAReason() throws {
        let id = UUID()
        #expect(try PaymentResolution(paymentId: id, as: "authorized", reason: " seen in back office ", actor: "a").reason == "seen in back office")
        #expect(throws: PaymentResolution.ResolutionError.invalidTarget("needs_review")) {
            try PaymentResolution(paymentId: id, as: "needs_review", reason: "x", actor: "a")
        }
        #expect(throws: PaymentResolution.ResolutionError.invalidTarget("prepared")) {
            try PaymentResolution(paymentId: id, as: "prepared", reason: "x", actor: "a")
        }
        #expect(throws: PaymentResolution.ResolutionError.missingReason) {
            try PaymentResolution(paymentId: id, as: "failed", reason: "  ", actor: "a")
        }
    }
}
