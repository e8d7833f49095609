import Pipeline
@testable import PaymentStages
import Testing

/// What a gateway answer tells the submit stage's endpoint gate (the gate itself is tested in `EndpointGateTests`).
@Suite struct SubmitCircuitReportTests {
    @Test func onlyTransportFailuresCount() {
        #expect(SubmitStage.report("paypipe.transport") == .failed(pause: nil))
        #expect(SubmitStage.report("paypipe.http_503") == .failed(pause: nil))
        #expect(SubmitStage.report("paypipe.http_500") == .failed(pause: nil))
        #expect(SubmitStage.report("70000") == .healthy, "a decline is a healthy gateway")
        #expect(SubmitStage.report("paypipe.signature_invalid") == .healthy)
        #expect(SubmitStage.report(nil) == .healthy)
        #expect(SubmitStage.report("paypipe.send_window") == .silent, "held back by the send window: never sent")
    }

    @Test func aCallTheGateHeldBackKeepsItsFailureCode() {
        #expect(SubmitStage.heldBack(.busy, merchantId: "m1", slots: 4) == ("merchant_busy", "merchant m1 has 4 gateway calls in flight"))
        #expect(SubmitStage.heldBack(.circuitOpen, merchantId: "m1", slots: 4).code == "circuit_open")
    }
}
