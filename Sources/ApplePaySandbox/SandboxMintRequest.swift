import ApplePay
import Crypto
import Foundation

/// What to put into a sandbox token, plus deliberate defects for negative tests.
public struct SandboxMintRequest: Sendable {
    public var version: ApplePayToken.Version
    public var merchantIdentifier: String
    /// Minor units.
    public var amount: Int64
    /// ISO 4217 numeric, e.g. "978".
    public var currencyNumeric: String
    public var pan: String
    /// YYMMDD.
    public var expiry: String
    /// Base64 online payment cryptogram.
    public var cryptogram: String
    public var eci: String?
    public var signingTime: Date
    /// The app's raw applicationData; the header carries its SHA-256 (as Apple does).
    public var applicationData: [UInt8]?
    /// Device transaction id (random 32 bytes by default).
    public var transactionId: [UInt8]
    /// A merchant token (MPAN) payment: `merchantTokenIdentifier` and `merchantTokenMetadata` in the decrypted data, as
    /// Apple adds them for recurring, automatic-reload and deferred payment requests; `nil` mints a device token (DPAN).
    public var merchantToken: MerchantToken?

    /// What a minted merchant-token payment carries besides the card data.
    public struct MerchantToken: Sendable {
        /// At most 64 characters [doc: Apple, MerchantTokenUnlinkRequest].
        public var identifier: String
        /// `cardMetadata.fpanSuffix`: the funding card's last four digits.
        public var fpanSuffix: String
        /// `cardMetadata.expirationDate`, MMYYYY.
        public var expirationDate: String

        public init(identifier: String = "DNITHE" + (0..<18).map { _ in String(Int.random(in: 0...9)) }.joined(),
                    fpanSuffix: String = "4242", expirationDate: String = "122030") {
            self.identifier = identifier
            self.fpanSuffix = fpanSuffix
            self.expirationDate = expirationDate
        }
    }

    // MARK: Defects for negative tests
    /// Encrypt these bytes instead of the payment-data JSON.
    public var plaintextOverride: [UInt8]?
    /// Sign with this certificate/key instead of the PKI's leaf for the version.
    public var signer: SandboxCertifiedKey?
    /// Embed these certificates instead of [signer, intermediate].
    public var embeddedCertificates: [Certificate]?
    /// Omit the signingTime signed attribute.
    public var omitSigningTime: Bool
    /// Flip a bit of the signer's signature value.
    public var corruptSignature: Bool
    /// Flip a bit of the ciphertext before signing (signature valid, GCM fails).
    public var corruptCiphertext: Bool
    /// Declare this signature algorithm instead of the one matching the signer key.
    public var declaredSignatureAlgorithm: ASN1ObjectIdentifier?
    /// Use this merchant identity instead of the PKI's identity for `merchantIdentifier`.
    public var merchant: SandboxMerchant?

    public init(
        version: ApplePayToken.Version = .ecV1, merchantIdentifier: String, amount: Int64, currencyNumeric: String,
        pan: String = "4111111111111111", expiry: String = "291231",
        cryptogram: String = Data((0..<20).map { _ in UInt8.random(in: 0...255) }).base64EncodedString(),
        eci: String? = "7", signingTime: Date = Date(), applicationData: [UInt8]? = nil,
        transactionId: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }
    ) {
        self.version = version
        self.merchantIdentifier = merchantIdentifier
        self.amount = amount
        self.currencyNumeric = currencyNumeric
        self.pan = pan
        self.expiry = expiry
        self.cryptogram = cryptogram
        self.eci = eci
        self.signingTime = signingTime
        self.applicationData = applicationData
        self.transactionId = transactionId
        self.omitSigningTime = false
        self.corruptSignature = false
        self.corruptCiphertext = false
    }
}
