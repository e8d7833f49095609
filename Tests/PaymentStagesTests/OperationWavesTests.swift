@testable import PaymentStages
import Testing

/// How the operations stage splits a batch into rounds: never two messages of one merchant (hence of one payment) in
/// one prepare transaction, each merchant's messages in batch order.
@Suite struct OperationWavesTests {
    @Test func oneMessagePerMerchantPerWaveInBatchOrder() {
        #expect(OperationsStage.waves([]) == [])
        #expect(OperationsStage.waves(["a", "b", "c"]) == [[0, 1, 2]])
        #expect(OperationsStage.waves(["a", "a", "b", "a", "b"]) == [[0, 2], [1, 4], [3]])
    }
}
