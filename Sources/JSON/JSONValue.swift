/// A JSON document as a Sendable value, with objects that keep their keys in document / insertion order.
///
/// PayPipe both signs JSON (JWT claims, gateway requests), where the exact bytes matter, and reads untrusted JSON on
/// the Apple Pay hot path, where speed and strictness matter. Foundation serves neither: `JSONSerialization`
/// (unordered `[String: Any]`, escapes `/`, bridging cost) and `JSONEncoder`/`JSONDecoder` (key order not guaranteed
/// on Linux, Codable machinery costing several percent of a token's whole decryption). Hence this small type:
/// serialising the same value always gives the same bytes, a parsed document re-serialises in the order it was
/// written, and parsing is strict. See `serialized()` for the output rules and `JSONValue.parse(_:maxDepth:)` for
/// the accepted input.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// An integer literal (no fraction, no exponent) that fits in 64 bits, kept exact: amounts never go through
    /// `Double`.
    case integer(Int64)
    /// Any other number. Non-finite values cannot be represented in JSON and serialise as `null`.
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// Members in order, keys unique.
    case object(JSONObject)

    // Equality is the synthesised structural one: object member order is significant (it changes the serialised
    // bytes), and `.integer(1)` differs from `.double(1)` for the same reason.

    // MARK: Reading

    /// The value of `key` when this is an object, else nil.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    /// The element at `index` when this is an array and the index is in range, else nil.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// Only `.integer`: `7.0`, `7e0` or an integer beyond Int64 give nil. A field specified as an integer (an amount
    /// in minor units) that arrives in another form is malformed, and is reported rather than converted.
    public var int64Value: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// Any number (integers converted, possibly rounding beyond 2^53).
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    // MARK: Building

    /// Sets `key` on an object: replaces the value in place if the key exists (keeping its position), otherwise
    /// appends. Precondition: `self` is an object.
    public mutating func set(_ value: JSONValue, forKey key: String) {
        guard case .object(var object) = self else {
            preconditionFailure("JSONValue.set(_:forKey:) on a non-object")
        }
        self = .null  // drop our reference so `object`'s members are uniquely referenced and mutate without a copy
        object.set(value, forKey: key)
        self = .object(object)
    }
}
