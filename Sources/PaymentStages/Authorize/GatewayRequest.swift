import JWT

/// A built connector request: claims-shaped JSON (`iss`, `iat`, `payload`) plus the two facts the submit stage
/// needs without decrypting them (the order reference and the request types).
///
/// The claims are what is persisted (encrypted) and re-signed at send time, so every attempt for a payment sends
/// the same `orderreference` and the same request content, only with a fresh `iat`.
public struct GatewayRequest: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let orderReference: String
    public let requestTypes: [String]
    /// A JSON object: `{"iss":…,"iat":…,"payload":{…}}`, serialised deterministically by ``JSONValue``.
    public let claims: JSONValue

    public init(orderReference: String, requestTypes: [String], claims: JSONValue) {
        self.orderReference = orderReference
        self.requestTypes = requestTypes
        self.claims = claims
    }

    /// Claims in merchant-decrypts mode carry the PAN and cryptogram: only the masked form is ever shown.
    public var description: String {
        "GatewayRequest(order: \(orderReference), types: \(requestTypes), claims: \(ClaimsRedactor.masked(claims).serializedString))"
    }

    public var debugDescription: String { description }

    /// `dump` and reflection-based printing see the masked description only.
    public var customMirror: Mirror { Mirror(self, children: ["masked": description], displayStyle: .struct) }
}
