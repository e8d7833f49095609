import ApplePay
import Foundation
import JSON

extension StoredPaymentData {
    /// Why stored card data could not be read back. Never carries the data itself.
    public enum FormatError: Error, Equatable, CustomStringConvertible {
        case notAJSONObject
        case invalidMember(String)

        public var description: String {
            switch self {
            case .notAJSONObject: "stored card data is not a JSON object"
            case .invalidMember(let name): "stored card data has an invalid '\(name)' member"
            }
        }
    }

    /// The plaintext sealed into `card_data`: the members synthesized `Codable` writes (so rows sealed
    /// with either encoding open), written with the JSON module — `JSONEncoder`/`JSONDecoder` cost more per payment
    /// than sealing and opening it. Contact keys are sorted so the same data always gives the same bytes.
    public func serialized() -> [UInt8] {
        var members: [(String, JSONValue?)] = [
            ("decrypted", decrypted?.jsonValue),
            ("walletToken", walletToken.map(JSONValue.string)),
            ("paymentMethodDisplayName", paymentMethodDisplayName.map(JSONValue.string)),
            ("paymentMethodNetwork", paymentMethodNetwork.map(JSONValue.string)),
            ("billingContact", billingContact.map(Self.contactValue)),
            ("shippingContact", shippingContact.map(Self.contactValue)),
        ]
        if let credential {
            members.append((credential.name, credential.value.map(JSONValue.string)))
            // Milliseconds since the epoch: exact in a JSON integer.
            members.append((credential.publishedAtName, credential.publishedAt.map { .integer(Int64(($0.timeIntervalSince1970 * 1000).rounded(.down))) }))
            // Only when true, so every other credential's bytes are as before.
            members.append((credential.amountPendingName, credential.amountPending ? .bool(true) : nil))
        }
        return JSONValue.object(omittingAbsent: members).serialized()
    }

    /// Reads what ``serialized()`` (or, before it, `JSONEncoder`) wrote.
    public init(serialized bytes: [UInt8]) throws(FormatError) {
        guard let root = try? JSONValue.parse(bytes), root.isObject else { throw .notAJSONObject }
        func string(_ name: String) throws(FormatError) -> String? {
            guard let value = root[name], !value.isNull else { return nil }
            guard let text = value.stringValue else { throw .invalidMember(name) }
            return text
        }
        func contact(_ name: String) throws(FormatError) -> [String: String]? {
            guard let value = root[name], !value.isNull else { return nil }
            guard let members = value.objectValue else { throw .invalidMember(name) }
            var contact: [String: String] = [:]
            for (key, member) in members {
                guard let text = member.stringValue else { throw .invalidMember(name) }
                contact[key] = text
            }
            return contact
        }
        var decrypted: DecryptedPaymentData?
        if let value = root["decrypted"], !value.isNull {
            do {
                decrypted = try DecryptedPaymentData.decode(value)
            } catch {
                throw .invalidMember("decrypted")
            }
        }
        self.init(
            decrypted: decrypted, walletToken: try string("walletToken"), paymentMethodDisplayName: try string("paymentMethodDisplayName"),
            paymentMethodNetwork: try string("paymentMethodNetwork"), billingContact: try contact("billingContact"),
            shippingContact: try contact("shippingContact"))
        for name in ConnectorRegistry.credentialNames {
            var found = ProcessorCredential(name: name, value: try string(name), publishedAt: nil)
            if let value = root[found.publishedAtName], !value.isNull {
                guard let millis = value.int64Value else { throw .invalidMember(found.publishedAtName) }
                found.publishedAt = Date(timeIntervalSince1970: Double(millis) / 1000)
            }
            switch root[found.amountPendingName] {
            case nil, .null?: break
            case .bool(let pending)?: found.amountPending = pending
            default: throw .invalidMember(found.amountPendingName)
            }
            if found.value != nil || found.publishedAt != nil { credential = found }
        }
    }

    private static func contactValue(_ contact: [String: String]) -> JSONValue {
        .object(contact.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })
    }
}
