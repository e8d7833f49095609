/// The members of a JSON object, in document order, with unique keys (the reader rejects duplicates).
struct JSONObject: Sendable, Equatable {
    let members: [(key: String, value: JSONValue)]

    init(members: [(key: String, value: JSONValue)]) {
        self.members = members
    }

    subscript(key: String) -> JSONValue? {
        for member in members where member.key == key { return member.value }
        return nil
    }

    static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}
