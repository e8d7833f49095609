import JSON

/// A JOSE header, kept together with its exact JSON bytes.
///
/// The signature covers the header's *bytes*, so a header parsed from a token (or written by another
/// implementation, like RFC 7515's example with line breaks) must be re-signed or verified byte for byte, never
/// re-serialised.
public struct JWTHeader: Sendable, Equatable {
    public let algorithm: JWTAlgorithm
    /// `typ`, usually "JWT".
    public let type: String?
    /// `kid`, when the issuer rotates keys.
    public let keyID: String?
    /// The exact UTF-8 JSON that is base64url-encoded into the token.
    public let json: [UInt8]

    /// A header serialised deterministically as `{"alg":…,"typ":…[,"kid":…]}`, which is what the gateways'
    /// examples and most JWT libraries emit.
    public init(algorithm: JWTAlgorithm, type: String? = "JWT", keyID: String? = nil) {
        var object: JSONValue = ["alg": .string(algorithm.rawValue)]
        if let type { object.set(.string(type), forKey: "typ") }
        if let keyID { object.set(.string(keyID), forKey: "kid") }
        self.algorithm = algorithm
        self.type = type
        self.keyID = keyID
        self.json = object.serialized()
    }

    /// Parses header JSON, keeping `json` verbatim. Rejects `alg` values other than HS256/384/512 (so `none`),
    /// and any `crit` member: RFC 7515 §4.1.11 requires rejecting critical extensions we do not implement.
    public init(json: [UInt8]) throws(JWTError) {
        let object: JSONValue
        do {
            object = try JSONValue.parse(json)
        } catch {
            throw .malformed("header is not valid JSON (\(error))")
        }
        guard object.objectValue != nil else { throw .malformed("header is not a JSON object") }
        guard let name = object["alg"]?.stringValue else { throw .malformed("header has no string alg") }
        guard let algorithm = JWTAlgorithm(rawValue: name) else { throw .unsupportedAlgorithm(name) }
        guard object["crit"] == nil else { throw .malformed("header lists critical extensions") }
        let type = object["typ"]
        let keyID = object["kid"]
        guard type == nil || type?.stringValue != nil, keyID == nil || keyID?.stringValue != nil else {
            throw .malformed("header typ/kid is not a string")
        }
        self.algorithm = algorithm
        self.type = type?.stringValue
        self.keyID = keyID?.stringValue
        self.json = json
    }
}
