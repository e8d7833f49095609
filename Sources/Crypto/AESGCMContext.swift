import COpenSSL

/// One EVP_CIPHER_CTX configured for AES-GCM; freed on deinit.
final class AESGCMContext {
    private let pointer: OpaquePointer
    private let encrypt: Bool

    init(key: [UInt8], nonce: [UInt8], encrypt: Bool) throws(CryptoError) {
        let cipher: OpaquePointer?
        switch key.count {
        case 16: cipher = FetchedAlgorithms.shared.aes128GCM
        case 24: cipher = FetchedAlgorithms.shared.aes192GCM
        case 32: cipher = FetchedAlgorithms.shared.aes256GCM
        default: throw .invalidInput("AES key must be 16, 24 or 32 bytes")
        }
        guard !nonce.isEmpty else { throw .invalidInput("GCM nonce must not be empty") }
        guard let context = EVP_CIPHER_CTX_new() else { throw OpenSSLErrorQueue.failure("EVP_CIPHER_CTX_new") }
        self.pointer = context
        self.encrypt = encrypt
        let ok = EVP_CipherInit_ex(context, cipher, nil, nil, nil, encrypt ? 1 : 0) == 1
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil) == 1
            && EVP_CipherInit_ex(context, nil, nil, key, nonce, encrypt ? 1 : 0) == 1
        guard ok else { throw OpenSSLErrorQueue.failure("AES-GCM init") }
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }

    func addAAD(_ aad: [UInt8]) throws(CryptoError) {
        guard !aad.isEmpty else { return }
        var length: Int32 = 0
        guard EVP_CipherUpdate(pointer, nil, &length, aad, Int32(aad.count)) == 1 else {
            throw OpenSSLErrorQueue.failure("AES-GCM AAD")
        }
    }

    func update(_ input: some ContiguousBytesSource) throws(CryptoError) -> [UInt8] {
        let result: [UInt8]? = input.withBytes { raw in
            var output = [UInt8](repeating: 0, count: raw.count)
            guard raw.count > 0 else { return output }
            var length: Int32 = 0
            let ok = EVP_CipherUpdate(
                pointer, &output, &length, raw.bindMemory(to: UInt8.self).baseAddress, Int32(raw.count)) == 1
            return ok && Int(length) == raw.count ? output : nil
        }
        guard let result else { throw OpenSSLErrorQueue.failure("AES-GCM update") }
        return result
    }

    func setExpectedTag(_ tag: some ContiguousBytesSource) throws(CryptoError) {
        var copy = tag.withBytes { Array($0.bindMemory(to: UInt8.self)) }
        guard EVP_CIPHER_CTX_ctrl(pointer, EVP_CTRL_GCM_SET_TAG, Int32(copy.count), &copy) == 1 else {
            throw OpenSSLErrorQueue.failure("AES-GCM set tag")
        }
    }

    func finish() throws(CryptoError) {
        var trailing = [UInt8](repeating: 0, count: 16)
        var length: Int32 = 0
        guard EVP_CipherFinal_ex(pointer, &trailing, &length) == 1 else {
            throw OpenSSLErrorQueue.failure(encrypt ? "AES-GCM seal" : "AES-GCM open")
        }
    }

    func tag() throws(CryptoError) -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: AESGCM.tagLength)
        guard EVP_CIPHER_CTX_ctrl(pointer, EVP_CTRL_GCM_GET_TAG, Int32(tag.count), &tag) == 1 else {
            throw OpenSSLErrorQueue.failure("AES-GCM get tag")
        }
        return tag
    }
}
