/// Byte containers the primitives accept without copying: `[UInt8]` and `ArraySlice<UInt8>`.
///
/// A narrow protocol instead of Foundation's `ContiguousBytes` keeps the Crypto API free of Foundation types.
public protocol ContiguousBytesSource {
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: ContiguousBytesSource where Element == UInt8 {
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(body)
    }
}

extension ArraySlice: ContiguousBytesSource where Element == UInt8 {
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(body)
    }
}
