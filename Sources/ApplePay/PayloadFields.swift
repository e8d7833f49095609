import JSON

/// Typed access to one object of the decrypted payload, with `payload_invalid` errors naming the field path
/// (never its value).
struct PayloadFields {
    /// A JSON object (callers check `isObject`).
    private let object: JSONValue
    private let path: String

    init(_ object: JSONValue, path: String) {
        self.object = object
        self.path = path
    }

    private func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The value, treating JSON null as absent.
    private func value(_ key: String) -> JSONValue? {
        guard let value = object[key], !value.isNull else { return nil }
        return value
    }

    func optionalString(_ key: String) throws(ApplePayError) -> String? {
        guard let value = value(key) else { return nil }
        guard let string = value.stringValue else { throw .payloadInvalid("decrypted payload field \(name(key)) is not a string") }
        return string
    }

    func string(_ key: String) throws(ApplePayError) -> String {
        guard let string = try optionalString(key) else { throw .payloadInvalid("decrypted payload lacks \(name(key))") }
        return string
    }

    func optionalInteger(_ key: String) throws(ApplePayError) -> Int64? {
        guard let value = value(key) else { return nil }
        guard let integer = value.int64Value else { throw .payloadInvalid("decrypted payload field \(name(key)) is not an integer") }
        return integer
    }

    func integer(_ key: String) throws(ApplePayError) -> Int64 {
        guard let integer = try optionalInteger(key) else { throw .payloadInvalid("decrypted payload lacks \(name(key))") }
        return integer
    }

    func optionalObject(_ key: String) throws(ApplePayError) -> PayloadFields? {
        guard let value = value(key) else { return nil }
        guard value.isObject else { throw .payloadInvalid("decrypted payload field \(name(key)) is not an object") }
        return PayloadFields(value, path: name(key))
    }

    func object(_ key: String) throws(ApplePayError) -> PayloadFields {
        guard let object = try optionalObject(key) else { throw .payloadInvalid("decrypted payload lacks \(name(key))") }
        return object
    }

    func optionalArray(_ key: String) throws(ApplePayError) -> [PayloadFields]? {
        guard let value = value(key) else { return nil }
        guard let array = value.arrayValue else { throw .payloadInvalid("decrypted payload field \(name(key)) is not an array") }
        var result: [PayloadFields] = []
        for (index, element) in array.enumerated() {
            guard element.isObject else { throw .payloadInvalid("decrypted payload field \(name(key))[\(index)] is not an object") }
            result.append(PayloadFields(element, path: "\(name(key))[\(index)]"))
        }
        return result
    }
}
