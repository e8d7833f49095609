/// A parsed JSON value (RFC 8259), produced by `JSONReader`.
///
/// Numbers keep their text so that amounts are converted exactly (no Double round trip). Objects keep their
/// members in order as an array: the documents are small, so a linear lookup beats hashing every key.
enum JSONValue: Sendable, Equatable {
    case string(String)
    case number(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object(JSONObject)

    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// An integer number without fraction or exponent.
    var int64Value: Int64? {
        if case .number(let text) = self { return Int64(text) }
        return nil
    }

    var isNull: Bool { self == .null }
}
