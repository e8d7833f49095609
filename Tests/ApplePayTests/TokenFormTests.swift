@testable import ApplePay
import Crypto
import Foundation
import Testing

/// The shapes backends send, and the pass-through re-serialisation.
@Suite struct TokenFormTests {
    func galaBytes() throws -> [UInt8] { try Fixtures.bytes("gala/token.json") }

    func wrap(_ object: Any) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object, options: [.fragmentsAllowed]))
    }

    @Test func everyFormParsesToTheSameToken() throws {
        let bare = try JSONSerialization.jsonObject(with: Data(galaBytes()))
        let pkPaymentToken: [String: Any] = [
            "paymentData": bare, "transactionIdentifier": "ABC",
            "paymentMethod": ["displayName": "MasterCard 1169", "network": "MasterCard", "type": "credit"],
        ]
        let wallet: [String: Any] = ["token": pkPaymentToken, "billingContact": ["givenName": "J"]]
        let forms: [[UInt8]] = [
            try galaBytes(),
            wrap(pkPaymentToken),
            wrap(wallet),
            wrap(String(decoding: try galaBytes(), as: UTF8.self)),  // JSON string of the bare form
            wrap(String(decoding: wrap(wallet), as: UTF8.self)),  // JSON string of the wallet form
            wrap(["paymentData": String(decoding: try galaBytes(), as: UTF8.self)]),  // paymentData as a string
        ]
        let reference = try ApplePayToken.parse(galaBytes())
        for (index, form) in forms.enumerated() {
            let token = try ApplePayToken.parse(form)
            #expect(token.signedBytes == reference.signedBytes, "form \(index)")
            #expect(token.transactionId == reference.transactionId, "form \(index)")
            #expect(token.publicKeyHash == reference.publicKeyHash, "form \(index)")
        }
        let fromWallet = try ApplePayToken.parse(wrap(wallet))
        #expect(fromWallet.paymentMethod == ApplePayToken.PaymentMethod(displayName: "MasterCard 1169", network: "MasterCard", type: "credit"))
        #expect(fromWallet.transactionIdentifier == "ABC")
    }

    @Test func paymentDataJSONPassesThroughAndStillVerifies() throws {
        let token = try ApplePayToken.parse(Fixtures.bytes("basis-theory/rsa/token.json"))
        let reparsed = try ApplePayToken.parse(token.paymentDataJSON)
        #expect(reparsed.signedBytes == token.signedBytes)
        #expect(reparsed.signature == token.signature)
        #expect(reparsed.version == .rsaV1)
        let object = try JSONSerialization.jsonObject(with: Data(token.paymentDataJSON)) as! [String: Any]
        #expect(Set(object.keys) == ["version", "data", "signature", "header"])
        try ApplePayDecryptor().verify(reparsed, now: Fixtures.date("2024-01-08T17:54:44Z"))
    }

    @Test func galaTamperedDataFixtureIsRejected() throws {
        // The source's tampered string is not valid base64: rejected while parsing.
        expectError("malformed_token") { _ = try ApplePayToken.parse(Fixtures.bytes("gala/bad-token-tampered-data.json")) }
    }

    @Test func nestingIsBounded() {
        var text = "{\"version\":\"EC_v1\"}"
        for _ in 0..<6 { text = String(decoding: wrap(text), as: UTF8.self) }
        expectError("malformed_token") { _ = try ApplePayToken.parse(Array(text.utf8)) }
    }
}
