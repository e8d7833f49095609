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

extension JSONValue {
    /// An object of the members whose value is present, in the given order: absent optionals are omitted, as
    /// synthesized `Codable` does, so a value written this way reads back like one `JSONEncoder` wrote.
    public static func object(omittingAbsent members: [(String, JSONValue?)]) -> JSONValue {
        .object(members.compactMap { key, value in value.map { (key: key, value: $0) } })
    }
}
