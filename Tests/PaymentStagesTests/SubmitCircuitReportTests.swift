import Pipeline
@testable import PaymentStages
import Testing

/// What a gateway answer tells the submit stage's endpoint gate (the gate itself is tested in `EndpointGateTests`).
@Suite struct SubmitCircuitReportTests {
    @Test func onlyTransportFailuresCount() {
        #expect(GatewayCall.report("paypipe.transport") == .failed(pause: nil))
        #expect(GatewayCall.report("paypipe.http_503") == .failed(pause: nil))
        #expect(GatewayCall.report("paypipe.http_500") == .failed(pause: nil))
        #expect(GatewayCall.report("70000") == .healthy, "a decline is a healthy gateway")
        #expect(GatewayCall.report("paypipe.signature_invalid") == .healthy)
        #expect(GatewayCall.report(nil) == .healthy)
        #expect(GatewayCall.report("paypipe.send_window") == .silent, "held back by the send window: never sent")
    }

    @Test func aCallTheGateHeldBackKeepsItsFailureCode() {
        #expect(GatewayCall.heldBack(.busy, merchantId: "m1", slots: 4) == ("merchant_busy", "merchant m1 has 4 gateway calls in flight"))
        #expect(GatewayCall.heldBack(.circuitOpen, merchantId: "m1", slots: 4).code == "circuit_open")
    }
}
