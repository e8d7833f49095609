import COpenSSL
import Foundation

/// An X.509 certificate: parsed once by OpenSSL, with the fields PayPipe needs extracted up front.
///
/// Immutable; safe to share. Validity and the issuer/serial encodings come from the DER itself so that CMS
/// `IssuerAndSerialNumber` can be compared byte for byte.
public final class Certificate: Sendable, CustomStringConvertible {
    let handle: X509Handle
    /// The DER encoding.
    public let derBytes: [UInt8]
    /// SHA-256 of `derBytes`.
    public let fingerprintSHA256: [UInt8]
    /// The subject public key.
    public let publicKey: PublicKey
    public let notBefore: ASN1Time
    public let notAfter: ASN1Time
    /// DER of the issuer Name.
    public let issuerNameDER: [UInt8]
    /// DER of the subject Name.
    public let subjectNameDER: [UInt8]
    /// Content octets of the serialNumber INTEGER.
    public let serialNumberBytes: [UInt8]

    /// Parses a DER certificate. Trailing bytes are rejected.
    public convenience init(der: some ContiguousBytesSource) throws(CryptoError) {
        let parsed: OpaquePointer? = der.withBytes { raw in
            var cursor: UnsafePointer<UInt8>? = raw.bindMemory(to: UInt8.self).baseAddress
            guard let x509 = d2i_X509(nil, &cursor, raw.count) else { return nil }
            guard cursor == raw.bindMemory(to: UInt8.self).baseAddress.map({ $0 + raw.count }) else {
                X509_free(x509)
                return nil
            }
            return x509
        }
        guard let parsed else {
            OpenSSLErrorQueue.clear()
            throw .decodingFailed("X.509 certificate DER")
        }
        try self.init(handle: X509Handle(taking: parsed))
    }

    /// Parses the first certificate of a PEM text.
    public convenience init(pem: String) throws(CryptoError) {
        let all = try Certificate.certificates(pem: pem)
        guard let first = all.first else { throw .decodingFailed("no certificate in PEM") }
        try self.init(handle: first.handle)
    }

    /// Parses every certificate of a PEM bundle, in order.
    public static func certificates(pem: String) throws(CryptoError) -> [Certificate] {
        let bio = try MemoryBIO(bytes: Array(pem.utf8))
        var result: [Certificate] = []
        while let x509 = PEM_read_bio_X509(bio.pointer, nil, nil, nil) {
            result.append(try Certificate(handle: X509Handle(taking: x509)))
        }
        OpenSSLErrorQueue.clear()  // the loop ends on a "no start line" error
        return result
    }

    init(handle: X509Handle) throws(CryptoError) {
        self.handle = handle
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(handle.pointer, &out)
        guard length > 0, let out else { throw OpenSSLErrorQueue.failure("i2d_X509") }
        self.derBytes = Array(UnsafeBufferPointer(start: out, count: Int(length)))
        CRYPTO_free(out, #fileID, #line)
        self.fingerprintSHA256 = SHA256.hash(derBytes)
        guard let key = X509_get_pubkey(handle.pointer) else {
            OpenSSLErrorQueue.clear()
            throw .decodingFailed("certificate public key")
        }
        self.publicKey = PublicKey(key: try EVPKey(taking: key))
        // TBSCertificate ::= SEQUENCE { [0] version, serialNumber, signature, issuer, validity, subject, … }
        let tbs = try DERReader.parse(derBytes).children().first?.children() ?? []
        var index = tbs.first?.tag == ASN1Tag.contextConstructed(0) ? 1 : 0
        guard tbs.count >= index + 6 else { throw .decodingFailed("TBSCertificate too short") }
        self.serialNumberBytes = Array(try tbs[index].expecting(tag: ASN1Tag.integer, "serialNumber").content)
        index += 2
        self.issuerNameDER = Array(try tbs[index].expecting(tag: ASN1Tag.sequence, "issuer").encoded)
        let validity = try tbs[index + 1].expecting(tag: ASN1Tag.sequence, "validity").children()
        guard validity.count == 2 else { throw .decodingFailed("validity") }
        self.notBefore = try validity[0].time()
        self.notAfter = try validity[1].time()
        self.subjectNameDER = Array(try tbs[index + 2].expecting(tag: ASN1Tag.sequence, "subject").encoded)
    }

    /// The extension's value (extnValue contents, i.e. the DER of the inner value), or nil if absent.
    public func extensionValue(_ oid: ASN1ObjectIdentifier) -> [UInt8]? {
        guard let object = OBJ_txt2obj(oid.description, 1) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(handle.pointer, object, -1)
        guard index >= 0, let ext = X509_get_ext(handle.pointer, index), let data = X509_EXTENSION_get_data(ext) else {
            return nil
        }
        guard let bytes = ASN1_STRING_get0_data(data) else { return [] }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
    }

    public func hasExtension(_ oid: ASN1ObjectIdentifier) -> Bool {
        extensionValue(oid) != nil
    }

    /// Whether `time` lies within [notBefore, notAfter].
    public func isValid(at time: ASN1Time) -> Bool {
        notBefore <= time && time <= notAfter
    }

    /// Whether this certificate's signature verifies under `key` (X509_verify).
    public func isSigned(by key: PublicKey) -> Bool {
        let ok = X509_verify(handle.pointer, key.key.pointer) == 1
        OpenSSLErrorQueue.clear()
        return ok
    }

    /// The subject in OpenSSL's one-line form, for diagnostics.
    public var subject: String { Self.oneLine(X509_get_subject_name(handle.pointer)) }
    /// The issuer in OpenSSL's one-line form, for diagnostics.
    public var issuer: String { Self.oneLine(X509_get_issuer_name(handle.pointer)) }

    public var description: String { "Certificate(\(subject))" }

    private static func oneLine(_ name: OpaquePointer?) -> String {
        var buffer = [CChar](repeating: 0, count: 512)
        guard let name, X509_NAME_oneline(name, &buffer, Int32(buffer.count)) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// PEM encoding ("CERTIFICATE").
    public func pem() throws(CryptoError) -> String {
        let bio = try MemoryBIO()
        guard PEM_write_bio_X509(bio.pointer, handle.pointer) == 1 else { throw OpenSSLErrorQueue.failure("PEM_write_bio_X509") }
        return String(decoding: bio.readAll(), as: UTF8.self)
    }
}

/// Owner of one `X509*`.
///
/// `@unchecked Sendable` because the certificate is never modified after parsing and is only read (encoding,
/// extension lookup, signature check, use as a verification input) afterwards, which OpenSSL 3 allows concurrently.
final class X509Handle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { X509_free(pointer) }
}
