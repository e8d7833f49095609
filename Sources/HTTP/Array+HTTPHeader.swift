extension Array where Element == HTTPHeader {
    /// The value of the first field named `name` (case-insensitive), or nil.
    public func value(for name: String) -> String? {
        first(where: { $0.hasName(name) })?.value
    }

    /// Every value of fields named `name` (case-insensitive), in wire order.
    public func values(for name: String) -> [String] {
        filter { $0.hasName(name) }.map(\.value)
    }

    /// Whether any field is named `name` (case-insensitive).
    public func contains(name: String) -> Bool {
        contains(where: { $0.hasName(name) })
    }
}
