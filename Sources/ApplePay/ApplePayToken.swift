import Crypto
import Foundation
import JSON

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

    /// The `paymentData` object re-serialised from the decoded fields (sorted keys, canonical base64/hex), for
    /// passing the token on in gateway-decrypts mode. Built on demand: JSON writing would otherwise cost as much as
    /// a third of a decryption.
    public var paymentDataJSON: [UInt8] {
        var header: [(String, String)] = [
            ("publicKeyHash", Data(publicKeyHash).base64EncodedString()), ("transactionId", transactionId),
        ]
        if let ephemeralPublicKey { header.append(("ephemeralPublicKey", Data(ephemeralPublicKey).base64EncodedString())) }
        if let wrappedKey { header.append(("wrappedKey", Data(wrappedKey).base64EncodedString())) }
        if let applicationData { header.append(("applicationData", Hex.encode(applicationData))) }
        func object(_ members: [(String, String)]) -> String {
            // Keys and values are fixed names, base64 and hex: nothing needs escaping.
            "{" + members.sorted { $0.0 < $1.0 }.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        }
        func string(_ value: String) -> String { "\"\(value)\"" }
        let text = object([
            ("data", string(Data(encryptedData).base64EncodedString())),
            ("header", object(header.map { ($0.0, string($0.1)) })),
            ("signature", string(Data(signature).base64EncodedString())),
            ("version", string(version.rawValue)),
        ])
        return Array(text.utf8)
    }

    /// The bytes the CMS `messageDigest` covers (applepay-token.md §2.3).
    public var signedBytes: [UInt8] {
        (wrappedKey ?? ephemeralPublicKey ?? []) + encryptedData + transactionIdBytes + (applicationData ?? [])
    }

    /// Parses a token from JSON bytes in any supported form.
    public static func parse(_ bytes: [UInt8]) throws(ApplePayError) -> ApplePayToken {
        try parse(value: jsonValue(bytes, "token"), nesting: 0)
    }

    public static func parse(_ string: String) throws(ApplePayError) -> ApplePayToken {
        try parse(Array(string.utf8))
    }

    private static func jsonValue(_ bytes: [UInt8], _ what: String) throws(ApplePayError) -> JSONValue {
        do {
            return try JSONValue.parse(bytes)
        } catch {
            throw .malformedToken("\(what) is not valid JSON (\(error))")
        }
    }

    /// Unwraps string/wallet/PKPaymentToken layers (bounded, so a self-nesting input cannot recurse forever).
    private static func parse(value: JSONValue, nesting: Int) throws(ApplePayError) -> ApplePayToken {
        guard nesting < 4 else { throw .malformedToken("token nested too deeply") }
        if let string = value.stringValue {
            return try parse(value: jsonValue(Array(string.utf8), "embedded token string"), nesting: nesting + 1)
        }
        guard value.isObject else { throw .malformedToken("token is not a JSON object") }
        if let inner = value["token"] {
            return try parse(value: inner, nesting: nesting + 1)
        }
        guard var paymentData = value["paymentData"] else {
            return try decodePaymentData(value, paymentMethod: nil, transactionIdentifier: nil)
        }
        if let string = paymentData.stringValue { paymentData = try jsonValue(Array(string.utf8), "paymentData string") }
        guard paymentData.isObject else { throw .malformedToken("paymentData is not an object") }
        let method = value["paymentMethod"].flatMap { method in
            method.isObject
                ? PaymentMethod(displayName: method["displayName"]?.stringValue, network: method["network"]?.stringValue, type: method["type"]?.stringValue)
                : nil
        }
        return try decodePaymentData(
            paymentData, paymentMethod: method, transactionIdentifier: value["transactionIdentifier"]?.stringValue)
    }

    /// `object` is the `paymentData` JSON object.
    private static func decodePaymentData(
        _ object: JSONValue, paymentMethod: PaymentMethod?, transactionIdentifier: String?
    ) throws(ApplePayError) -> ApplePayToken {
        guard let versionString = object["version"]?.stringValue else { throw .malformedToken("paymentData.version missing") }
        guard let version = Version(rawValue: versionString) else {
            let shown = versionString.prefix(16).filter { $0.isLetter || $0.isNumber || $0 == "_" }
            throw .unsupportedVersion("unsupported token version \"\(shown)\"")
        }
        guard let header = object["header"], header.isObject else { throw .malformedToken("paymentData.header missing") }
        let data = try base64(object["data"], "data")
        guard data.count > AESGCM.tagLength else { throw .malformedToken("data too short") }
        let signature = try base64(object["signature"], "signature")
        let publicKeyHash = try base64(header["publicKeyHash"], "header.publicKeyHash")
        guard publicKeyHash.count == 32 else { throw .malformedToken("header.publicKeyHash must be 32 bytes") }
        guard let transactionIdHex = header["transactionId"]?.stringValue, let transactionIdBytes = Hex.decode(transactionIdHex),
            !transactionIdBytes.isEmpty
        else { throw .malformedToken("header.transactionId missing or not hex") }
        var applicationData: [UInt8]?
        if let value = header["applicationData"], !value.isNull {
            guard let hex = value.stringValue, let bytes = Hex.decode(hex) else {
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
        return ApplePayToken(
            version: version, transactionId: lowercaseHex(transactionIdHex, decoded: transactionIdBytes), publicKeyHash: publicKeyHash,
            paymentMethod: paymentMethod, transactionIdentifier: transactionIdentifier,
            encryptedData: data, signature: signature, ephemeralPublicKey: ephemeralPublicKey, wrappedKey: wrappedKey,
            transactionIdBytes: transactionIdBytes, applicationData: applicationData)
    }

    /// The canonical lower-case form of a validated hex string: the string itself when it already is (devices send
    /// lower case), which saves re-encoding on every token.
    private static func lowercaseHex(_ hex: String, decoded: [UInt8]) -> String {
        hex.utf8.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "F")).contains($0) }) ? Hex.encode(decoded) : hex
    }

    private static func base64(_ value: JSONValue?, _ field: String) throws(ApplePayError) -> [UInt8] {
        guard var string = value?.stringValue else { throw .malformedToken("\(field) missing") }
        guard let bytes = string.withUTF8({ Base64.decode($0) }), !bytes.isEmpty else {
            throw .malformedToken("\(field) is not valid base64")
        }
        return bytes
    }
}

extension ApplePayToken {
    /// The `paymentData.version` values PayPipe supports.
    public enum Version: String, Sendable, Equatable, CaseIterable {
        /// ECDH P-256 + AES-256-GCM.
        case ecV1 = "EC_v1"
        /// RSA-OAEP key wrap + AES-GCM (regions where ECC is not allowed).
        case rsaV1 = "RSA_v1"
    }
}

extension ApplePayToken {
    /// `PKPaymentToken.paymentMethod`: display data only, never used for decisions.
    public struct PaymentMethod: Sendable, Equatable, Codable {
        public var displayName: String?
        public var network: String?
        public var type: String?

        public init(displayName: String?, network: String?, type: String?) {
            self.displayName = displayName
            self.network = network
            self.type = type
        }
    }
}
