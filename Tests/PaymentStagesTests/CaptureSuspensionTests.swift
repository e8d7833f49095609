import JWT
@testable import PaymentStages
import Pipeline
import Testing

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

    @Test func onlyTrustPaymentsRequestsCarryTheSettleStatus() {
        #expect(CaptureSuspension.request(Self.request, mode: .manual, connector: .opp) == Self.request)
        #expect(CaptureSuspension.request(Self.request, mode: .manual, connector: .tapPay) == Self.request)
    }

    @Test func aSuspendedAnswerIsAuthorisedOnlyWhenAsked() {
        let suspended = GatewayResponseMapper.result(fromClaims: ["payload": ["version": "1.00", "response": [[
            "requesttypedescription": "AUTH", "errorcode": "0", "errormessage": "Ok", "settlestatus": "2", "transactionreference": "1-2-3",
        ]]]])
        #expect(suspended.outcome == .needsReview && suspended.reason == "gateway_suspended")
        #expect(CaptureSuspension.result(suspended, asked: false) == suspended)
        let asked = CaptureSuspension.result(suspended, asked: true)
        #expect(asked.outcome == .authorized && asked.reason == nil && asked.transactionReference == "1-2-3")
        let declined = GatewayResponseMapper.result(fromClaims: ["payload": ["version": "1.00", "response": [[
            "requesttypedescription": "AUTH", "errorcode": "70000", "errormessage": "Decline", "settlestatus": "3",
        ]]]])
        #expect(CaptureSuspension.result(declined, asked: true) == declined)
    }
}
