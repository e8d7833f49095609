extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }

    /// Keeps the literal's order, which is what makes `["iss": …, "iat": …]` serialise deterministically.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        precondition(Set(elements.map(\.0)).count == elements.count, "duplicate key in JSON object literal")
        self = .object(elements.map { (key: $0.0, value: $0.1) })
    }
}
