/// A connector's own section of the merchant document's `gateway` (e.g. `gateway.<documentKey>` {account, secret, …}),
/// declared in the connector's folder and read and written by the shared merchant code without naming it. Its secret
/// is sealed with the merchant's other secrets under ``secretKey``; ``withoutSecret`` is what `merchants.config` keeps.
public protocol ConnectorSection: Codable, Sendable, Equatable {
    /// The section's key in `gateway` (the merchant document and `merchants.config`).
    static var documentKey: String { get }
    /// The secret's key in the sealed secrets (``MerchantSecrets``).
    static var secretKey: String { get }
    /// The processor account the section names: what `gateway.siteReference` reads as when the document leaves it out.
    var account: String { get }
    var secret: String? { get }
    var withoutSecret: Self { get }
}

extension ConnectorSection {
    func isEqual(_ other: any ConnectorSection) -> Bool { (other as? Self) == self }
}

/// The connector sections a `gateway` carries, at most one per connector, encoded under their ``ConnectorSection/documentKey``s.
public struct ConnectorSections: Sendable, Equatable {
    private var values: [String: any ConnectorSection] = [:]

    public init() {}

    public subscript<Section: ConnectorSection>(_ type: Section.Type) -> Section? {
        get { values[Section.documentKey] as? Section }
        set { values[Section.documentKey] = newValue }
    }

    public var isEmpty: Bool { values.isEmpty }
    /// The account of the section present, if any (documents carry at most one: ``ConnectorDocument``).
    var account: String? { sorted.first?.account }
    /// The sections' secrets by their ``ConnectorSection/secretKey``.
    var secrets: [String: String] {
        values.values.reduce(into: [:]) { secrets, section in
            if let secret = section.secret { secrets[type(of: section).secretKey] = secret }
        }
    }
    var withoutSecrets: ConnectorSections {
        var copy = ConnectorSections()
        for (key, section) in values { copy.values[key] = section.withoutSecret }
        return copy
    }

    private var sorted: [any ConnectorSection] { values.keys.sorted().compactMap { values[$0] } }

    public static func == (lhs: ConnectorSections, rhs: ConnectorSections) -> Bool {
        lhs.values.count == rhs.values.count && lhs.values.allSatisfy { key, section in rhs.values[key].map(section.isEqual) ?? false }
    }

    /// Every registered connector's section present under `decoder`'s keys.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        for type in ConnectorRegistry.sectionTypes {
            if let section = try Self.decode(type, from: container) { values[type.documentKey] = section }
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        for section in sorted { try container.encode(section, forKey: AnyCodingKey(type(of: section).documentKey)) }
    }

    private static func decode<Section: ConnectorSection>(_ type: Section.Type, from container: KeyedDecodingContainer<AnyCodingKey>) throws -> Section? {
        try container.decodeIfPresent(Section.self, forKey: AnyCodingKey(Section.documentKey))
    }
}

/// A key known only at run time (a connector's section or secret).
struct AnyCodingKey: CodingKey {
    let stringValue: String
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    var intValue: Int? { nil }
    init?(intValue: Int) { nil }
}
