import Foundation
import PaymentStages
import Testing

/// The reference sent to the gateway stays unique per payment and within the 25 characters Trust Payments keeps, so
/// that no truncation can make two payments of one order share it.
@Suite struct GatewayOrderReferenceTests {
    static let id = UUID(uuidString: "0A04C4C7-1D89-47DB-B734-31CD33B1961E")!

    @Test func aShortMerchantReferenceKeepsItsNameWithTwelveHexDigitsOfThePayment() {
        #expect(GatewayOrderReference.forPayment(merchantReference: "ORDER-0001", paymentId: Self.id) == "ORDER-0001.0a04c4c71d89")
        #expect(GatewayOrderReference.forPayment(merchantReference: "order-12345", paymentId: Self.id) == "order-12345.0a04c4c71d89")
    }

    @Test("a reference too long for the combined form is replaced by the payment id", arguments: ["order-1234-attempt", "ORDER-00001", ""])
    func aLongReferenceSendsThePaymentIdAlone(merchant: String) {
        let combinedFits = !merchant.isEmpty && merchant.utf8.count + 13 <= 25
        let sent = GatewayOrderReference.forPayment(merchantReference: merchant, paymentId: Self.id)
        #expect(sent == (combinedFits ? "\(merchant).0a04c4c71d89" : "0a04c4c71d8947dbb73431cd3"))
    }

    @Test func everyFormFitsTheGatewaysFieldAndTwoPaymentsOfOneOrderNeverShareIt() {
        for length in 0...40 {
            let merchant = String(repeating: "x", count: length)
            let first = GatewayOrderReference.forPayment(merchantReference: merchant, paymentId: UUID())
            let retry = GatewayOrderReference.forPayment(merchantReference: merchant, paymentId: UUID())
            #expect(first.utf8.count <= GatewayOrderReference.maximumLength)
            #expect(first != retry)
        }
    }
}
