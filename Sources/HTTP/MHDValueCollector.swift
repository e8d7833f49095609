import CMicroHTTPD

/// Collects libmicrohttpd key/value pairs (headers, query arguments) of one connection.
final class MHDValueCollector {
    private(set) var pairs: [(key: String, value: String)] = []

    /// Every pair of `kind`, in the order libmicrohttpd stored them (wire order).
    static func collect(_ kind: MHD_ValueKind, from connection: OpaquePointer) -> [(key: String, value: String)] {
        let collector = MHDValueCollector()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(
                connection, kind, Self.append, Unmanaged.passUnretained(collector).toOpaque())
        }
        return collector.pairs
    }

    private static let append: MHD_KeyValueIterator = { context, _, key, value in
        guard let context, let key else { return .YES }
        let collector = Unmanaged<MHDValueCollector>.fromOpaque(context).takeUnretainedValue()
        collector.pairs.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
        return .YES
    }
}
