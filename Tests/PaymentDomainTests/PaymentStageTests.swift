import Foundation
import PaymentDomain
import Testing

@Suite struct PaymentStageTests {
    /// Every stage a payment waits in is a lifecycle stage; `operations` consumes its own jobs, no payment waits in
    /// it (its payments are done with the AUTH pipeline).
    @Test func everyQueueStageIsALifecycleStageAndDoneIsLast() {
        let carrying = Stage.allCases.filter(\.carriesPayments)
        #expect(carrying.map { PaymentStage($0).queueStage } == carrying)
        #expect(PaymentStage.done.queueStage == nil)
        #expect(PaymentStage.allCases == carrying.map(PaymentStage.init) + [.done])
        #expect(Stage.allCases.filter { !$0.carriesPayments } == [.operations])
        #expect(PaymentStage(.operations) == .done && Stage.operations.next == nil)
    }

    /// Each status's queue stage is where the payment is while that status is current. `awaiting_amount` is notify's
    /// (the merchant is told `payment.awaiting_amount`); notify marks it done, and it waits in no queue until a
    /// `payment.complete.requested` operation moves it on.
    @Test func aStatusSitsInItsStagesLifecycleStep() {
        for status in PaymentStatus.allCases {
            #expect(PaymentStage(status.stage).queueStage == status.stage)
        }
        #expect(PaymentStatus.awaitingAmount.stage == .notify)
    }

    /// The values are the `payments.stage` CHECK constraint's, in order (Pipeline's schema, read as text).
    @Test func valuesAreTheSchemasCheckList() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let schema = try String(contentsOfFile: root.appendingPathComponent("Sources/Pipeline/Store/PayPipeSchema.swift").path, encoding: .utf8)
        let check = try #require(schema.firstMatch(of: try Regex(#"CHECK \(stage IN \(([^)]*)\)\)"#))?.output[1].substring)
        let values = check.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "' ")) }
        #expect(values == PaymentStage.allCases.map(\.rawValue))
    }

    @Test func paymentIdsRenderLowercase() throws {
        let id = try #require(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF"))
        #expect(id.paymentIDText == "6f9619ff-8b86-d011-b42d-00c04fc964ff")
        #expect(UUID(uuidString: id.paymentIDText) == id)
    }
}
