import Foundation
import JSON

/// Apple's `MerchantTokenEventResponse`, the answer of "Get Details of a Merchant Token Event" [doc]
/// (developer.apple.com/documentation/merchanttokennotificationservices/merchanttokeneventresponse): `eventType`,
/// `merchantTokenIdentifier` and `reason` required (at most 64, 64 and 256 characters), `merchantTokenMetadata`
/// optional. `reason`'s values are not documented: kept verbatim.
public struct MerchantTokenEvent: Sendable, Equatable {
    public var type: EventType
    public var merchantTokenIdentifier: String
    public var reason: String
    /// `merchantTokenMetadata` as Apple sent it (card art and card metadata), stored verbatim as JSON.
    public var metadata: JSONValue?

    /// `eventType`. Unknown values are kept as `.other` and never fail the event: Apple added
    /// `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY` in a later API version [doc], and may add more.
    public enum EventType: Sendable, Equatable {
        case unlink
        case updatedMetadata
        case updatedCardArt
        case updatedMerchantTokenPublicKey
        case other(String)

        public init(_ text: String) {
            switch text {
            case "UNLINK": self = .unlink
            case "UPDATED_METADATA": self = .updatedMetadata
            case "UPDATED_CARD_ART": self = .updatedCardArt
            case "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY": self = .updatedMerchantTokenPublicKey
            default: self = .other(text)
            }
        }

        public var rawValue: String {
            switch self {
            case .unlink: "UNLINK"
            case .updatedMetadata: "UPDATED_METADATA"
            case .updatedCardArt: "UPDATED_CARD_ART"
            case .updatedMerchantTokenPublicKey: "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY"
            case .other(let text): text
            }
        }
    }

    public init(type: EventType, merchantTokenIdentifier: String, reason: String, metadata: JSONValue?) {
        self.type = type
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.reason = reason
        self.metadata = metadata
    }

    /// Decodes Apple's answer body. Throws ``MerchantTokenEventError`` for anything but an object with the required
    /// fields as strings within their documented lengths, and a `merchantTokenMetadata` that is an object when present.
    public static func decode(_ body: [UInt8]) throws(MerchantTokenEventError) -> MerchantTokenEvent {
        let value: JSONValue
        do {
            value = try JSONValue.parse(body)
        } catch {
            throw .notJSON(error.description)
        }
        guard value.isObject else { throw .notJSON("not an object") }
        func required(_ key: String, max: Int) throws(MerchantTokenEventError) -> String {
            guard let field = value[key], !field.isNull else { throw .missing(key) }
            guard let text = field.stringValue else { throw .invalid(key, "not a string") }
            guard !text.isEmpty, text.count <= max else { throw .invalid(key, "empty or longer than \(max)") }
            return text
        }
        let type = try required("eventType", max: 64)
        let identifier = try required("merchantTokenIdentifier", max: 64)
        let reason = try required("reason", max: 256)
        var metadata: JSONValue?
        if let field = value["merchantTokenMetadata"], !field.isNull {
            guard field.isObject else { throw .invalid("merchantTokenMetadata", "not an object") }
            metadata = field
        }
        return MerchantTokenEvent(type: EventType(type), merchantTokenIdentifier: identifier, reason: reason, metadata: metadata)
    }
}

/// Why Apple's event answer could not be used. The event stays queued as failed with this text (docs/merchant-tokens.md).
public enum MerchantTokenEventError: Error, Sendable, Equatable, CustomStringConvertible {
    case notJSON(String)
    case missing(String)
    case invalid(String, String)

    public var description: String {
        switch self {
        case .notJSON(let reason): "the event answer is not a JSON object: \(reason)"
        case .missing(let field): "the event answer has no \(field)"
        case .invalid(let field, let reason): "the event answer's \(field) is invalid: \(reason)"
        }
    }
}

/// What an event means for PayPipe's stored credential (the pure decision; the puller applies it).
public enum MerchantTokenEventAction: Sendable, Equatable {
    /// `UNLINK`: the credential becomes `unlinked`; later MITs fail `credential_unlinked`; the merchant gets
    /// `credential.unlinked`.
    case unlink(merchantTokenIdentifier: String, reason: String)
    /// `UPDATED_METADATA` / `UPDATED_CARD_ART`: the stored metadata is replaced; the merchant gets `credential.updated`.
    case updateMetadata(merchantTokenIdentifier: String, metadata: JSONValue?)
    /// Nothing to change in PayPipe (a new public key for encrypted token metadata, which PayPipe does not request,
    /// or a type Apple added later): recorded as applied, with the reason.
    case ignore(String)

    public static func decide(_ event: MerchantTokenEvent) -> MerchantTokenEventAction {
        switch event.type {
        case .unlink:
            return .unlink(merchantTokenIdentifier: event.merchantTokenIdentifier, reason: event.reason)
        case .updatedMetadata, .updatedCardArt:
            return .updateMetadata(merchantTokenIdentifier: event.merchantTokenIdentifier, metadata: event.metadata)
        case .updatedMerchantTokenPublicKey:
            return .ignore("PayPipe requests no encrypted token metadata, so a new public key changes nothing")
        case .other(let type):
            return .ignore("event type \(type) is not known to PayPipe")
        }
    }
}
