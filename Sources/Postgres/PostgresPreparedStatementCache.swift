/// The statements a connection has prepared, keyed by SQL text and declared parameter types.
///
/// Types are part of the key because the server fixes them at prepare time: the same SQL bound once with
/// `Int32` and once with `Int` gets two statements rather than a silent conversion. Names are `pp_<n>`, never
/// reused on a connection, so a statement dropped from the cache can never be confused with a newer one.
struct PostgresPreparedStatementCache {
    struct Key: Hashable {
        let sql: String
        let types: [UInt32]
    }

    let capacity: Int
    private var names: [Key: String] = [:]
    private var nextNumber = 1

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { names.count }

    subscript(key: Key) -> String? { names[key] }

    /// A fresh name when there is room for another statement, nil when the cache is full.
    mutating func reserveName() -> String? {
        guard names.count < capacity else { return nil }
        defer { nextNumber += 1 }
        return "pp_\(nextNumber)"
    }

    mutating func insert(_ name: String, for key: Key) {
        names[key] = name
    }

    mutating func remove(_ key: Key) {
        names[key] = nil
    }

    /// Forgets everything: the server side is gone (new session) or about to be.
    mutating func removeAll() {
        names.removeAll()
    }
}
