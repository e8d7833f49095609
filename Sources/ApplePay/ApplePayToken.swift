import Crypto
import Foundation

/// A parsed (not yet verified) Apple Pay payment token.
///
/// Accepts every shape backends forward: the bare `paymentData` object, a `PKPaymentToken`
/// (`{paymentData, transactionIdentifier, paymentMethod}`), the wallet form `{"token": {…}}` (an `ApplePayPayment`,
/// possibly with contacts) and a JSON string containing any of these. Parsing only decodes; `ApplePayDecryptor`
/// verifies and decrypts.
public struct ApplePayToken: Sendable {
    public var version: Version
    /// `header.transactionId` (lower-case hex), the device-generated id used for replay detection.
    public var transactionId: String
    /// `header.publicKeyHash`: SHA-256 of the merchant certificate's SubjectPublicKeyInfo.
    public var publicKeyHash: [UInt8]
    /// `PKPaymentToken.paymentMethod`, when the caller sent it.
    public var paymentMethod: PaymentMethod?
    /// `PKPaymentToken.transactionIdentifier`, when the caller sent it.
    public var transactionIdentifier: String?
    /// The `paymentData` object re-serialised (sorted keys), for passing the token on unchanged in meaning.
    public var paymentDataJSON: [UInt8]

    /// `data`: ciphertext followed by the 16-byte GCM tag.
    public var encryptedData: [UInt8]
    /// `signature`: detached CMS SignedData (BER).
    public var signature: [UInt8]
    /// `header.ephemeralPublicKey` (EC_v1): DER SubjectPublicKeyInfo.
    public var ephemeralPublicKey: [UInt8]?
    /// `header.wrappedKey` (RSA_v1): RSA-OAEP ciphertext of the AES key.
    public var wrappedKey: [UInt8]?
    /// `header.transactionId` decoded.
    public var transactionIdBytes: [UInt8]
    /// `header.applicationData` decoded (SHA-256 of the app's applicationData), when present.
    public var applicationData: [UInt8]?

    /// The bytes the CMS `messageDigest` covers (applepay-token.md §2.3).
    public var signedBytes: [UInt8] {
        (wrappedKey ?? ephemeralPublicKey ?? []) + encryptedData + transactionIdBytes + (applicationData ?? [])
    }

    /// Parses a token from JSON bytes in any supported form.
    public static func parse(_ bytes: [UInt8]) throws(ApplePayError) -> ApplePayToken {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        } catch {
            throw .malformedToken("token is not valid JSON")
        }
        return try parse(object: object, nesting: 0)
    }

    public static func parse(_ string: String) throws(ApplePayError) -> ApplePayToken {
        try parse(Array(string.utf8))
    }

    /// Unwraps string/wallet/PKPaymentToken layers (bounded, so a self-nesting input cannot recurse forever).
    private static func parse(object: Any, nesting: Int) throws(ApplePayError) -> ApplePayToken {
        guard nesting < 4 else { throw .malformedToken("token nested too deeply") }
        if let string = object as? String {
            return try parse(object: try jsonObject(string), nesting: nesting + 1)
        }
        guard let dictionary = object as? [String: Any] else { throw .malformedToken("token is not a JSON object") }
        if let inner = dictionary["token"] {
            return try parse(object: inner, nesting: nesting + 1)
        }
        guard let paymentDataValue = dictionary["paymentData"] else {
            return try decodePaymentData(dictionary, paymentMethod: nil, transactionIdentifier: nil)
        }
        let paymentData = try (paymentDataValue as? String).map(jsonObject) ?? paymentDataValue
        guard let paymentDataObject = paymentData as? [String: Any] else { throw .malformedToken("paymentData is not an object") }
        var method: PaymentMethod?
        if let raw = dictionary["paymentMethod"] as? [String: Any] {
            method = PaymentMethod(
                displayName: raw["displayName"] as? String, network: raw["network"] as? String, type: raw["type"] as? String)
        }
        return try decodePaymentData(
            paymentDataObject, paymentMethod: method, transactionIdentifier: dictionary["transactionIdentifier"] as? String)
    }

    private static func jsonObject(_ string: String) throws(ApplePayError) -> Any {
        do {
            return try JSONSerialization.jsonObject(with: Data(string.utf8), options: [.fragmentsAllowed])
        } catch {
            throw .malformedToken("embedded token string is not valid JSON")
        }
    }

    private static func decodePaymentData(
        _ object: [String: Any], paymentMethod: PaymentMethod?, transactionIdentifier: String?
    ) throws(ApplePayError) -> ApplePayToken {
        guard let versionString = object["version"] as? String else { throw .malformedToken("paymentData.version missing") }
        guard let version = Version(rawValue: versionString) else {
            let shown = versionString.prefix(16).filter { $0.isLetter || $0.isNumber || $0 == "_" }
            throw .unsupportedVersion("unsupported token version \"\(shown)\"")
        }
        guard let header = object["header"] as? [String: Any] else { throw .malformedToken("paymentData.header missing") }
        let data = try base64(object["data"], "data")
        guard data.count > AESGCM.tagLength else { throw .malformedToken("data too short") }
        let signature = try base64(object["signature"], "signature")
        let publicKeyHash = try base64(header["publicKeyHash"], "header.publicKeyHash")
        guard publicKeyHash.count == 32 else { throw .malformedToken("header.publicKeyHash must be 32 bytes") }
        guard let transactionIdHex = header["transactionId"] as? String, let transactionIdBytes = Hex.decode(transactionIdHex),
            !transactionIdBytes.isEmpty
        else { throw .malformedToken("header.transactionId missing or not hex") }
        var applicationData: [UInt8]?
        if let value = header["applicationData"], !(value is NSNull) {
            guard let hex = value as? String, let bytes = Hex.decode(hex) else {
                throw .malformedToken("header.applicationData is not hex")
            }
            applicationData = bytes
        }
        var ephemeralPublicKey: [UInt8]?
        var wrappedKey: [UInt8]?
        switch version {
        case .ecV1: ephemeralPublicKey = try base64(header["ephemeralPublicKey"], "header.ephemeralPublicKey")
        case .rsaV1: wrappedKey = try base64(header["wrappedKey"], "header.wrappedKey")
        }
        let reserialized: Data
        do {
            reserialized = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        } catch {
            throw .malformedToken("paymentData cannot be re-serialised")
        }
        return ApplePayToken(
            version: version, transactionId: Hex.encode(transactionIdBytes), publicKeyHash: publicKeyHash,
            paymentMethod: paymentMethod, transactionIdentifier: transactionIdentifier, paymentDataJSON: Array(reserialized),
            encryptedData: data, signature: signature, ephemeralPublicKey: ephemeralPublicKey, wrappedKey: wrappedKey,
            transactionIdBytes: transactionIdBytes, applicationData: applicationData)
    }

    private static func base64(_ value: Any?, _ field: String) throws(ApplePayError) -> [UInt8] {
        guard let string = value as? String else { throw .malformedToken("\(field) missing") }
        guard let data = Data(base64Encoded: string), !data.isEmpty else { throw .malformedToken("\(field) is not valid base64") }
        return Array(data)
    }
}
