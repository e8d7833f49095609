import JWT
@testable import PaymentStages
import Pipeline
import Testing
import TrustPaymentsWire

/// A manual-capture AUTH asks to be suspended (settlestatus "2" on the AUTH request), and its suspended answer is
/// authorised, while an automatic AUTH's request and answers are what they were.
@Suite struct CaptureSuspensionTests {
    static let request = GatewayRequest(orderReference: "O-1", requestTypes: ["AUTH"],
                                        claims: ["iss": "u", "payload": ["baseamount": "1000", "requesttypedescriptions": ["AUTH"]]])

    @Test func onlyAManualAuthAsksToBeSuspended() {
        #expect(CaptureSuspension.request(Self.request, mode: .automatic, connector: .trustPayments) == Self.request)
        let manual = CaptureSuspension.request(Self.request, mode: .manual, connector: .trustPayments)
        #expect(manual.claims["payload"]?["settlestatus"] == "2")
        #expect(manual.claims["payload"]?["baseamount"] == "1000" && manual.orderReference == "O-1")
        #expect(CaptureSuspension.asksSuspension(manual) && !CaptureSuspension.asksSuspension(Self.request))
    }

    static let oppRequest = GatewayRequest(orderReference: "O-2", requestTypes: ["DB"],
                                           claims: ["payload": ["amount": "10.00", "currency": "GBP", "paymentType": "DB"]])
    static let tapPayRequest = GatewayRequest(orderReference: "O-3", requestTypes: ["pay-by-prime"],
                                              claims: ["payload": ["prime": "p", "amount": 10, "delay_capture_in_days": 3]])

    /// Each connector holds a manual AUTH its own way: OPP as a pre-authorisation (PA), TapPay with no automatic
    /// capture (delay_capture_in_days -1); neither carries Trust Payments' settle status, and automatic ones are untouched.
    @Test(arguments: [
        (ConnectorKind.opp, "paymentType", JSONValue.string("PA")),
        (ConnectorKind.tapPay, "delay_capture_in_days", JSONValue.integer(-1)),
    ])
    func otherConnectorsHoldAManualAuthTheirWay(connector: ConnectorKind, field: String, value: JSONValue) {
        let request = connector == .opp ? Self.oppRequest : Self.tapPayRequest
        #expect(CaptureSuspension.request(request, mode: .automatic, connector: connector) == request)
        let manual = CaptureSuspension.request(request, mode: .manual, connector: connector)
        #expect(manual.claims["payload"]?[field] == value)
        #expect(manual.claims["payload"]?["settlestatus"] == nil && manual.claims["payload"]?["amount"] == request.claims["payload"]?["amount"])
        #expect(manual.requestTypes == (connector == .opp ? ["PA"] : request.requestTypes))
        // Their held AUTH is not read as a Trust Payments suspension request (ConnectorPlugin.asksHold).
        #expect(!CaptureSuspension.asksSuspension(manual) && !ConnectorRegistry.asksHold(manual))
    }

    @Test func aSuspendedAnswerIsAuthorisedOnlyWhenAsked() {
        let suspended = TrustPaymentsResponseMapper.result(fromClaims: ["payload": ["version": "1.00", "response": [[
            "requesttypedescription": "AUTH", "errorcode": "0", "errormessage": "Ok", "settlestatus": "2", "transactionreference": "1-2-3",
        ]]]])
        #expect(suspended.outcome == .needsReview && suspended.reason == "gateway_suspended")
        #expect(CaptureSuspension.result(suspended, asked: false) == suspended)
        let asked = CaptureSuspension.result(suspended, asked: true)
        #expect(asked.outcome == .authorized && asked.reason == nil && asked.transactionReference == "1-2-3")
        let declined = TrustPaymentsResponseMapper.result(fromClaims: ["payload": ["version": "1.00", "response": [[
            "requesttypedescription": "AUTH", "errorcode": "70000", "errormessage": "Decline", "settlestatus": "3",
        ]]]])
        #expect(CaptureSuspension.result(declined, asked: true) == declined)
    }
}
