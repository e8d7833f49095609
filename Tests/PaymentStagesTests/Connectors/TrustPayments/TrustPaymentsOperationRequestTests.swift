import PaymentDomain
@testable import PaymentStages
import Testing

/// Trust Payments' Webservices form of the operations ``OperationProtocol`` decides (trustpayments.md §8): the
/// TRANSACTIONUPDATE's filter and updates, the REFUND's parent and amount, and no form for a processor operation.
@Suite struct TrustPaymentsOperationRequestTests {
    static func update(_ settle: SettleStatus?, _ base: Int64?) -> GatewayOperation {
        .transactionUpdate(transactionReference: "1-2-346", settleStatus: settle, settleBaseAmount: base)
    }

    @Test func aTransactionUpdateFiltersTheAuthAndSetsOnlyWhatItChanges() {
        #expect(Self.update(.pendingSettlement, nil).requestObject(siteReference: "test_site12345").serializedString
            == #"{"requesttypedescriptions":["TRANSACTIONUPDATE"],"filter":{"sitereference":[{"value":"test_site12345"}],"transactionreference":[{"value":"1-2-346"}]},"updates":{"settlestatus":"0"}}"#)
        #expect(Self.update(.pendingSettlement, 600).requestObject(siteReference: "s").serializedString
            .hasSuffix(#""updates":{"settlestatus":"0","settlebaseamount":"600"}}"#))
        #expect(Self.update(.cancelled, nil).requestObject(siteReference: "s").serializedString.hasSuffix(#""updates":{"settlestatus":"3"}}"#))
        #expect(Self.update(nil, 700).requestObject(siteReference: "s").serializedString.hasSuffix(#""updates":{"settlebaseamount":"700"}}"#))
        #expect(GatewayOperation.suspend("r").requestObject(siteReference: "s").serializedString.hasSuffix(#""updates":{"settlestatus":"2"}}"#))
    }

    @Test func aRefundNamesItsParentAndAlwaysItsAmount() {
        #expect(GatewayOperation.refund(parentTransactionReference: "1-2-346", baseAmount: 300).requestObject(siteReference: "test_site12345")
            .serializedString
            == #"{"requesttypedescriptions":["REFUND"],"sitereference":"test_site12345","parenttransactionreference":"1-2-346","baseamount":"300"}"#)
    }

    @Test func aProcessorOperationHasNoWebservicesForm() {
        #expect(GatewayOperation.capture(transactionReference: "r", amount: 1).requestObject(siteReference: "s") == .null)
        #expect(GatewayOperation.reversal(transactionReference: "r").requestObject(siteReference: "s") == .null)
    }
}
