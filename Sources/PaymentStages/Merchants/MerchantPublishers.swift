import Foundation

/// A merchant document's `publishers`: the broker users (AMQP `user_id`) allowed to publish the merchant's jobs and
/// operations (docs/merchant-config.md, docs/security.md "Tenant boundary"). Absent: any publisher, as before the
/// field existed. The rule itself is ``PublisherRule``.
public struct MerchantPublishers: Codable, Sendable, Equatable {
    public var names: [String]

    public init(_ names: [String]) {
        self.names = names
    }

    /// An array of strings; anything else (`42`, `"backend-a"`, `[1]`) is refused naming the field, rather than
    /// Foundation's generic type-mismatch text.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let names = try? container.decode([String].self) else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath,
                debugDescription: "publishers must be an array of broker user names (strings), e.g. [\"checkout-backend-a\"]"))
        }
        self.names = names
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(names)
    }

    /// Why `names` cannot be applied, or nil: every name a non-empty string without surrounding spaces, no name twice,
    /// at least one name (an empty list would refuse every job; leave the field out to allow any publisher).
    public static func problem(_ names: [String]) -> String? {
        guard !names.isEmpty else {
            return "publishers must name at least one broker user (leave the field out to accept any publisher)"
        }
        var seen: Set<String> = []
        for (index, name) in names.enumerated() {
            if name.isEmpty || name != name.trimmingCharacters(in: .whitespacesAndNewlines) {
                return "publishers[\(index)] must be a non-empty broker user name without surrounding spaces"
            }
            if !seen.insert(name).inserted {
                return "publishers[\(index)] \"\(name)\" is listed twice"
            }
        }
        return nil
    }
}
