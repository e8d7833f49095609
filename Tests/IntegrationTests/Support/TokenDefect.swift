import ApplePay
import ApplePaySandbox
import Foundation
import PaymentStages
import PayPipeDevTools

/// A named defect of a minted token, each of which the decrypt stage must reject with one token-stage code. The
/// names are the `build` recipes `token:<name>` of Tests/Fixtures/bad-input/manifest.json.
enum TokenDefect: String, CaseIterable {
    case corruptSignature
    /// Signed by a leaf of another PKI, whose certificates the token carries: the chain does not reach the trust root.
    case foreignRoot
    case staleSigningTime
    case futureSigningTime
    /// Encrypted for a merchant identity the sandbox merchant does not hold.
    case otherMerchantKey
    case corruptCiphertext
    case invalidPayload

    /// Any PKI other than the sandbox's (generated once per test process: RSA key generation is slow).
    static let foreign: SandboxPKI = try! SandboxPKI.generate()

    func apply(to request: inout SandboxMintRequest, sandbox: SandboxEnvironment) {
        switch self {
        case .corruptSignature: request.corruptSignature = true
        case .foreignRoot:
            request.signer = Self.foreign.ecLeaf
            request.embeddedCertificates = [Self.foreign.ecLeaf.certificate, Self.foreign.intermediate.certificate]
        case .staleSigningTime: request.signingTime = Date().addingTimeInterval(-3600)
        case .futureSigningTime: request.signingTime = Date().addingTimeInterval(3600)
        case .otherMerchantKey: request.merchant = try? sandbox.pki.merchant("merchant.other", keyType: .ec)
        case .corruptCiphertext: request.corruptCiphertext = true
        case .invalidPayload: request.plaintextOverride = Array("{\"not\":\"payment data\"}".utf8)
        }
    }
}
