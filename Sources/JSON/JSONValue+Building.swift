extension JSONValue {
    /// An object of the members whose value is present, in the given order: absent optionals are omitted, as
    /// synthesized `Codable` does, so a value written this way reads back like one `JSONEncoder` wrote.
    public static func object(omittingAbsent members: [(String, JSONValue?)]) -> JSONValue {
        .object(members.compactMap { key, value in value.map { (key: key, value: $0) } })
    }
}
