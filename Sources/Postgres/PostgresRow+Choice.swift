extension PostgresRow {
    /// A text column holding one of `T`'s raw values (a state, a kind); an unknown value is a decoding error naming it,
    /// never a silent default.
    package func decodeChoice<T: RawRepresentable>(_ column: String, as: T.Type = T.self) throws -> T where T.RawValue == String {
        let text = try decode(column, as: String.self)
        guard let value = T(rawValue: text) else {
            throw PostgresError.decoding(column: column, expected: String(describing: T.self), reason: "unknown value '\(text)'")
        }
        return value
    }
}
