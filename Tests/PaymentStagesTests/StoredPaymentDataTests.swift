import ApplePay
import Foundation
import JWT
import PaymentStages
import Testing

/// The sealed card-data plaintext moved from `JSONEncoder` to the JSON module: rows written by either must open.
@Suite struct StoredPaymentDataTests {
    static let full = StoredPaymentData(
        decrypted: DecryptedPaymentData(
            applicationPrimaryAccountNumber: "4111111111111111", applicationExpirationDate: "291231", currencyCode: "826",
            transactionAmount: 1099, cardholderName: "A \"Quoted\" Name", deviceManufacturerIdentifier: "040010030273",
            paymentDataType: "3DSecure",
            paymentData: .init(onlinePaymentCryptogram: "AQIDBA==", eciIndicator: "05", emvData: nil, encryptedPINData: nil),
            authenticationResponses: [.init(merchantIdentifier: "merchant.x", authenticationData: "QUJD", transactionAmount: 1099)],
            merchantTokenIdentifier: "DNITHE1",
            merchantTokenMetadata: .init(
                cardArt: [.init(url: "https://art.example/a.png", width: 160, height: 100)],
                cardMetadata: .init(expirationDate: "12/29", fpanSuffix: "1234"))),
        walletToken: nil, paymentMethodDisplayName: "Visa 1111", paymentMethodNetwork: "Visa",
        billingContact: ["givenName": "Ann", "addressLines": "1 Road\nFlat 2"], shippingContact: nil)

    static let gatewayDecrypts = StoredPaymentData(
        decrypted: nil, walletToken: #"{"paymentData":{"version":"EC_v1"}}"#, paymentMethodDisplayName: nil,
        paymentMethodNetwork: nil, billingContact: nil, shippingContact: ["emailAddress": "a@b.example"])

    static func same(_ a: StoredPaymentData, _ b: StoredPaymentData) -> Bool {
        a.decrypted == b.decrypted && a.walletToken == b.walletToken && a.paymentMethodDisplayName == b.paymentMethodDisplayName
            && a.paymentMethodNetwork == b.paymentMethodNetwork && a.billingContact == b.billingContact
            && a.shippingContact == b.shippingContact
    }

    /// A TapPay job's stored data: the prime and its publish time (to the millisecond) survive sealing; older rows have neither.
    @Test func tapPayPrimeRoundTrips() throws {
        let published = Date(timeIntervalSince1970: 1_735_689_600.123)
        let data = StoredPaymentData.tapPay(prime: "ap_test_x", publishedAt: published, billingContact: ["givenName": "Ada"], shippingContact: nil)
        let read = try StoredPaymentData(serialized: data.serialized())
        #expect(read.tapPayPrime == "ap_test_x")
        #expect(abs((read.tapPayPrimePublishedAt?.timeIntervalSince1970 ?? 0) - published.timeIntervalSince1970) < 0.001)
        #expect(read.decrypted == nil && read.walletToken == nil)
        #expect(try StoredPaymentData(serialized: Array(#"{"walletToken":"t"}"#.utf8)).tapPayPrime == nil)
        #expect(throws: StoredPaymentData.FormatError.invalidMember("tapPayPrimePublishedAt")) {
            try StoredPaymentData(serialized: Array(#"{"tapPayPrime":"p","tapPayPrimePublishedAt":"soon"}"#.utf8))
        }
        // The credential keeps its own names in both encodings (the connector's, not a nested object).
        let sealed = try JSONValue.parse(data.serialized())
        #expect(sealed["tapPayPrime"]?.stringValue == "ap_test_x" && sealed["tapPayPrimePublishedAt"]?.int64Value == 1_735_689_600_123)
        let encoded = try JSONEncoder().encode(data)
        #expect(try JSONValue.parse(Array(encoded))["tapPayPrime"]?.stringValue == "ap_test_x")
        let decoded = try JSONDecoder().decode(StoredPaymentData.self, from: encoded)
        #expect(decoded.tapPayPrime == "ap_test_x" && decoded.tapPayPrimePublishedAt == data.tapPayPrimePublishedAt)
        #expect(decoded.credential == data.credential)
    }

    @Test(arguments: [Self.full, Self.gatewayDecrypts])
    func roundTripsThroughTheJSONModule(data: StoredPaymentData) throws {
        #expect(Self.same(try StoredPaymentData(serialized: data.serialized()), data))
        #expect(data.serialized() == data.serialized())  // contact keys sorted: stable bytes
    }

    @Test(arguments: [Self.full, Self.gatewayDecrypts])
    func readsWhatJSONEncoderWroteAndViceVersa(data: StoredPaymentData) throws {
        #expect(Self.same(try StoredPaymentData(serialized: Array(try JSONEncoder().encode(data))), data))
        let decoded = try JSONDecoder().decode(StoredPaymentData.self, from: Data(data.serialized()))
        #expect(Self.same(decoded, data))
    }

    @Test func refusesMalformedPlaintextWithoutEchoingIt() {
        let secret = "4111111111111111"
        let cases: [(String, StoredPaymentData.FormatError)] = [
            ("[\"\(secret)\"]", .notAJSONObject), ("not json \(secret)", .notAJSONObject),
            (#"{"walletToken":7}"#, .invalidMember("walletToken")),
            (#"{"billingContact":{"givenName":["\#(secret)"]}}"#, .invalidMember("billingContact")),
            (#"{"decrypted":{"applicationPrimaryAccountNumber":"\#(secret)"}}"#, .invalidMember("decrypted")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected) { try StoredPaymentData(serialized: Array(text.utf8)) }
            #expect(!expected.description.contains(secret))
        }
    }
}
