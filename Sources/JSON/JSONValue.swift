/// A JSON document as a Sendable value, with objects that keep their keys in document / insertion order.
///
/// PayPipe both signs JSON (JWT claims, gateway requests), where the exact bytes matter, and reads untrusted JSON on
/// the Apple Pay hot path, where speed and strictness matter. Foundation serves neither: `JSONSerialization`
/// (unordered `[String: Any]`, escapes `/`, bridging cost) and `JSONEncoder`/`JSONDecoder` (key order not guaranteed
/// on Linux, Codable machinery costing several percent of a token's whole decryption). Hence this small type:
/// serialising the same value always gives the same bytes, a parsed document re-serialises in the order it was
/// written, and parsing is strict. See `serialized()` for the output rules and `JSONValue.parse(_:maxDepth:)` for
/// the accepted input.
public enum JSONValue: Sendable {
    case null
    case bool(Bool)
    /// An integer literal (no fraction, no exponent) that fits in 64 bits, kept exact: amounts never go through
    /// `Double`.
    case integer(Int64)
    /// Any other number. Non-finite values cannot be represented in JSON and serialise as `null`.
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// Members in document / insertion order. Keys are unique: the parser rejects duplicates, a literal with one
    /// traps, and `set(_:forKey:)` replaces in place. An array rather than a dictionary: order is part of the
    /// serialised bytes, and the objects PayPipe handles are small (a token has a handful of members), where a
    /// linear scan beats hashing every key.
    case object([(key: String, value: JSONValue)])

    // MARK: Reading

    /// The value of `key` when this is an object, else nil.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        for member in members where member.key == key { return member.value }
        return nil
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

    public var objectValue: [(key: String, value: JSONValue)]? {
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
        guard case .object(var members) = self else {
            preconditionFailure("JSONValue.set(_:forKey:) on a non-object")
        }
        self = .null  // drop our reference so `members` is uniquely referenced and mutates without a copy
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = value
        } else {
            members.append((key, value))
        }
        self = .object(members)
    }

    /// Whether this is an object: for callers that then read members through `subscript(key:)`.
    public var isObject: Bool {
        if case .object = self { return true }
        return false
    }
}

extension JSONValue: Equatable {
    /// Structural equality. Object member order is significant (it changes the serialised bytes), and `.integer(1)`
    /// differs from `.double(1)` for the same reason.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.integer(a), .integer(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }
}
