import PaymentDomain
@testable import PaymentStages
import Testing

/// Trust Payments' Webservices form of the operations ``OperationProtocol`` decides (trustpayments.md §8): the
/// TRANSACTIONUPDATE's filter and updates, the REFUND's parent and amount, and the names requests are stored under.
@Suite struct TrustPaymentsOperationRequestTests {

    @Test func aTransactionUpdateFiltersTheAuthAndSetsOnlyWhatItChanges() {
        #expect(GatewayOperation.capture(transactionReference: "1-2-346", amount: nil).requestObject(siteReference: "test_site12345").serializedString
            == #"{"requesttypedescriptions":["TRANSACTIONUPDATE"],"filter":{"sitereference":[{"value":"test_site12345"}],"transactionreference":[{"value":"1-2-346"}]},"updates":{"settlestatus":"0"}}"#)
        #expect(GatewayOperation.capture(transactionReference: "1-2-346", amount: 600).requestObject(siteReference: "s").serializedString
            .hasSuffix(#""updates":{"settlestatus":"0","settlebaseamount":"600"}}"#))
        #expect(GatewayOperation.void(transactionReference: "1-2-346").requestObject(siteReference: "s").serializedString.hasSuffix(#""updates":{"settlestatus":"3"}}"#))
        #expect(GatewayOperation.lowerCapture(transactionReference: "1-2-346", amount: 700).requestObject(siteReference: "s").serializedString.hasSuffix(#""updates":{"settlebaseamount":"700"}}"#))
        #expect(GatewayOperation.hold(transactionReference: "r").requestObject(siteReference: "s").serializedString.hasSuffix(#""updates":{"settlestatus":"2"}}"#))
    }

    @Test func aRefundNamesItsParentAndAlwaysItsAmount() {
        #expect(GatewayOperation.refund(parentTransactionReference: "1-2-346", amount: 300).requestObject(siteReference: "test_site12345")
            .serializedString
            == #"{"requesttypedescriptions":["REFUND"],"sitereference":"test_site12345","parenttransactionreference":"1-2-346","baseamount":"300"}"#)
    }

    /// The names requests are stored (`request_type`) and reported under stay Trust Payments' and the processors' own:
    /// every Trust Payments operation but a refund is a TRANSACTIONUPDATE; a processor's own are CAPTURE, REVERSAL and
    /// REFUND; the status queries TRANSACTIONQUERY and QUERY.
    @Test func storedRequestNamesAreUnchanged() {
        let requests: [GatewayOperation] = [.capture(transactionReference: "r", amount: 1), .void(transactionReference: "r"),
                                            .lowerCapture(transactionReference: "r", amount: 1), .hold(transactionReference: "r"),
                                            .refund(parentTransactionReference: "r", amount: 1)]
        let trustPayments = OperationProtocol.Transport.webservices.requestNames
        #expect(requests.map(trustPayments.name(of:)) == ["TRANSACTIONUPDATE", "TRANSACTIONUPDATE", "TRANSACTIONUPDATE", "TRANSACTIONUPDATE", "REFUND"])
        #expect(trustPayments.query == "TRANSACTIONQUERY")
        for transport in [OperationProtocol.Transport.opp, .tapPay] {
            #expect([requests[0], requests[1], requests[4]].map(transport.requestNames.name(of:)) == ["CAPTURE", "REVERSAL", "REFUND"])
            #expect(transport.requestNames.query == "QUERY")
        }
    }
}
