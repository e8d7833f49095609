/// A JSON document as a Sendable value, with objects that keep their keys in insertion order.
///
/// PayPipe signs JSON (JWT claims, gateway requests), so the exact bytes matter: serialising the same value must
/// always give the same bytes, and a parsed document must re-serialise in the order it was written. Foundation's
/// `JSONSerialization` (unordered `[String: Any]`, escapes `/`) and `JSONEncoder` (key order not guaranteed on
/// Linux) give neither, hence this small type. See `serialized()` for the exact output rules and
/// `JSONValue.parse(_:)` for the accepted input.
public enum JSONValue: Sendable {
    case null
    case bool(Bool)
    /// An integer literal that fits in 64 bits (no fraction, no exponent).
    case integer(Int64)
    /// Any other number. Non-finite values cannot be represented in JSON and serialise as `null`.
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// Members in document / insertion order. Keys are unique: the parser rejects duplicates, and `set(_:forKey:)`
    /// replaces in place.
    case object([(key: String, value: JSONValue)])

    // MARK: Reading

    /// The value of `key` when this is an object, else nil.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first(where: { $0.key == key })?.value
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

    /// Integers, and doubles that are exactly integral and in range.
    public var int64Value: Int64? {
        switch self {
        case .integer(let value): return value
        case .double(let value): return Int64(exactly: value)
        default: return nil
        }
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
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = value
        } else {
            members.append((key, value))
        }
        self = .object(members)
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

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }

    /// Keeps the literal's order, which is what makes `["iss": ..., "iat": ...]` serialise deterministically.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        precondition(Set(elements.map(\.0)).count == elements.count, "duplicate key in JSON object literal")
        self = .object(elements.map { (key: $0.0, value: $0.1) })
    }
}
