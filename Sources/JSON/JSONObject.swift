/// The members of a JSON object, in document / insertion order, with unique keys.
///
/// An array rather than a dictionary: order is part of the serialised bytes, and the objects PayPipe handles are
/// small (a token has a handful of members), where a linear scan beats hashing every key.
public struct JSONObject: Sendable, Equatable {
    public private(set) var members: [(key: String, value: JSONValue)]

    /// Precondition: keys are unique (the parser rejects duplicates; a literal with one is a programming error).
    public init(members: [(key: String, value: JSONValue)] = []) {
        precondition(Set(members.map(\.key)).count == members.count, "duplicate key in JSON object")
        self.members = members
    }

    /// For the parser, which has already checked that the keys are unique.
    init(uniqueMembers members: [(key: String, value: JSONValue)]) {
        self.members = members
    }

    public subscript(key: String) -> JSONValue? {
        for member in members where member.key == key { return member.value }
        return nil
    }

    /// Replaces the value in place if `key` exists (keeping its position), otherwise appends.
    public mutating func set(_ value: JSONValue, forKey key: String) {
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = value
        } else {
            members.append((key, value))
        }
    }

    /// Member order is significant, like the serialised bytes.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(members: elements.map { (key: $0.0, value: $0.1) })
    }
}
