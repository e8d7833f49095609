import COpenSSL

/// An owned OpenSSL memory BIO, used to feed PEM readers and collect PEM writers' output.
final class MemoryBIO {
    let pointer: OpaquePointer

    /// A read-only BIO over a private copy of `bytes` (OpenSSL keeps the pointer, so the copy lives as long as the BIO).
    init(bytes: [UInt8]) throws(CryptoError) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        storage.copyBytes(from: bytes)
        guard let bio = BIO_new_mem_buf(storage.baseAddress, Int32(bytes.count)) else {
            storage.deallocate()
            throw OpenSSLErrorQueue.failure("BIO_new_mem_buf")
        }
        self.pointer = bio
        self.ownedStorage = storage
    }

    /// An empty, writable BIO.
    init() throws(CryptoError) {
        guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLErrorQueue.failure("BIO_new") }
        self.pointer = bio
        self.ownedStorage = nil
    }

    private let ownedStorage: UnsafeMutableRawBufferPointer?

    deinit {
        BIO_free(pointer)
        ownedStorage?.deallocate()
    }

    /// Everything written so far.
    func readAll() -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = BIO_read(pointer, &chunk, Int32(chunk.count))
            if count <= 0 { break }
            result.append(contentsOf: chunk[0..<Int(count)])
        }
        return result
    }
}
