import ApplePay
import ApplePaySandbox
import Crypto
import Foundation

/// One sandbox PKI shared by the minted-token tests (RSA key generation is the slow part).
enum SandboxFixture {
    static let pki: SandboxPKI = try! SandboxPKI.generate()
    static let merchantIdentifier = "merchant.com.paypipe.test"
    static let decryptor = ApplePayDecryptor(configuration: ApplePayVerifierConfiguration(trustRoot: pki.trustRoot))

    static var keyring: MerchantKeyring {
        MerchantKeyring(identities: [
            try! pki.merchant(merchantIdentifier, keyType: .ec).identity, try! pki.merchant(merchantIdentifier, keyType: .rsa).identity,
        ])
    }

    static func request(_ version: ApplePayToken.Version = .ecV1, signingTime: Date = Date()) -> SandboxMintRequest {
        SandboxMintRequest(
            version: version, merchantIdentifier: merchantIdentifier, amount: 1234, currencyNumeric: "978",
            pan: "4111111111111111", expiry: "291231", cryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=", eci: "7",
            signingTime: signingTime)
    }

    /// Rewrites one field of the minted token's `paymentData` (or its header).
    static func edit(_ token: [UInt8], header: Bool = false, _ change: (inout [String: Any]) -> Void) -> [UInt8] {
        var object = try! JSONSerialization.jsonObject(with: Data(token)) as! [String: Any]
        var paymentData = object["paymentData"] as! [String: Any]
        if header {
            var headerObject = paymentData["header"] as! [String: Any]
            change(&headerObject)
            paymentData["header"] = headerObject
        } else {
            change(&paymentData)
        }
        object["paymentData"] = paymentData
        return Array(try! JSONSerialization.data(withJSONObject: object))
    }
}
