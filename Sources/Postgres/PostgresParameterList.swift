/// Bound parameters laid out the way `PQexecParams` / `PQexecPrepared` want them.
///
/// All values share one buffer; text values get the NUL terminator libpq expects (it ignores lengths for text
/// parameters and reads up to the terminator), which is also why a text value must not contain a NUL itself.
struct PostgresParameterList {
    private(set) var types: [UInt32] = []
    private var formats: [Int32] = []
    private var lengths: [Int32] = []
    /// Offset of each value in `buffer`, nil for SQL NULL.
    private var starts: [Int?] = []
    private var buffer: [UInt8] = []

    init(_ bindings: [any PostgresBindable]) throws(PostgresError) {
        types.reserveCapacity(bindings.count)
        formats.reserveCapacity(bindings.count)
        lengths.reserveCapacity(bindings.count)
        starts.reserveCapacity(bindings.count)
        for (offset, binding) in bindings.enumerated() {
            let bindingType = type(of: binding)
            let start = buffer.count
            types.append(bindingType.postgresDataType.oid)
            formats.append(bindingType.postgresFormat.rawValue)
            guard binding.encodePostgresValue(into: &buffer) else {
                buffer.removeSubrange(start...)
                starts.append(nil)
                lengths.append(0)
                continue
            }
            let length = buffer.count - start
            guard length <= Int(Int32.max) else {
                throw .invalidParameter(position: offset + 1, reason: "the value is larger than 2 GiB")
            }
            if bindingType.postgresFormat == .text {
                guard !buffer[start...].contains(0) else {
                    throw .invalidParameter(position: offset + 1, reason: "a text value must not contain a NUL byte")
                }
                buffer.append(0)
            }
            starts.append(start)
            lengths.append(Int32(length))
        }
    }

    var count: Int32 { Int32(types.count) }

    /// Same parameter types and formats, so both lists can execute the same prepared statement.
    func hasSameLayout(as other: PostgresParameterList) -> Bool {
        types == other.types && formats == other.formats
    }

    /// Calls `body` with the C arrays; the pointers are valid only during the call.
    func withCArrays<R>(
        _ body: (
            _ types: UnsafePointer<UInt32>?, _ values: UnsafePointer<UnsafePointer<CChar>?>?,
            _ lengths: UnsafePointer<Int32>?, _ formats: UnsafePointer<Int32>?
        ) -> R
    ) -> R {
        buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress)
            let values: [UnsafePointer<CChar>?] = starts.map { start in
                start.flatMap { base?.advanced(by: $0).assumingMemoryBound(to: CChar.self) }
            }
            return types.withUnsafeBufferPointer { types in
                values.withUnsafeBufferPointer { values in
                    lengths.withUnsafeBufferPointer { lengths in
                        formats.withUnsafeBufferPointer { formats in
                            body(types.baseAddress, values.baseAddress, lengths.baseAddress, formats.baseAddress)
                        }
                    }
                }
            }
        }
    }
}
