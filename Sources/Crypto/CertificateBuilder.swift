import COpenSSL
import Foundation

/// Creates X.509 v3 certificates through OpenSSL (X509_new … X509_sign), for the sandbox PKI and tests.
public struct CertificateBuilder: Sendable {
    public var subjectCommonName: String
    public var subjectPublicKey: PublicKey
    public var notBefore: Date
    public var notAfter: Date
    /// Positive serial number magnitude (random 16 bytes by default).
    public var serialNumber: [UInt8]
    public var extensions: [CertificateExtension]

    public init(
        subjectCommonName: String, subjectPublicKey: PublicKey, notBefore: Date, notAfter: Date,
        serialNumber: [UInt8] = SecureRandom.bytes(count: 16), extensions: [CertificateExtension] = []
    ) {
        self.subjectCommonName = subjectCommonName
        self.subjectPublicKey = subjectPublicKey
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.serialNumber = serialNumber
        self.extensions = extensions
    }

    /// Signs with `issuerKey` (SHA-256; ECDSA or RSA PKCS#1 v1.5 after the key). `issuer` nil means self-signed.
    public func sign(issuer: Certificate?, issuerKey: PrivateKey) throws(CryptoError) -> Certificate {
        guard let x509 = X509_new() else { throw OpenSSLErrorQueue.failure("X509_new") }
        let handle = X509Handle(taking: x509)
        guard X509_set_version(x509, 2) == 1 else { throw OpenSSLErrorQueue.failure("X509_set_version") }
        try setSerial(x509)
        try setNames(x509, issuer: issuer)
        guard ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore.timeIntervalSince1970)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter.timeIntervalSince1970)) != nil,
            X509_set_pubkey(x509, subjectPublicKey.key.pointer) == 1
        else { throw OpenSSLErrorQueue.failure("certificate fields") }
        for ext in extensions { try add(ext, to: x509) }
        guard X509_sign(x509, issuerKey.key.pointer, EVP_sha256()) > 0 else { throw OpenSSLErrorQueue.failure("X509_sign") }
        return try Certificate(handle: handle)
    }

    private func setSerial(_ x509: OpaquePointer) throws(CryptoError) {
        let der = DERWriter.integer(magnitude: serialNumber)
        let integer: UnsafeMutablePointer<ASN1_INTEGER>? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ASN1_INTEGER(nil, &cursor, buffer.count)
        }
        guard let integer else { throw OpenSSLErrorQueue.failure("serial number") }
        defer { ASN1_INTEGER_free(integer) }
        guard X509_set_serialNumber(x509, integer) == 1 else { throw OpenSSLErrorQueue.failure("X509_set_serialNumber") }
    }

    private func setNames(_ x509: OpaquePointer, issuer: Certificate?) throws(CryptoError) {
        guard let name = X509_NAME_new() else { throw OpenSSLErrorQueue.failure("X509_NAME_new") }
        defer { X509_NAME_free(name) }
        let value = Array(subjectCommonName.utf8)
        guard X509_NAME_add_entry_by_txt(name, "CN", V_ASN1_UTF8STRING, value, Int32(value.count), -1, 0) == 1,
            X509_set_subject_name(x509, name) == 1,
            X509_set_issuer_name(x509, issuer.map { X509_get_subject_name($0.handle.pointer) } ?? name) == 1
        else { throw OpenSSLErrorQueue.failure("certificate names") }
    }

    private func add(_ ext: CertificateExtension, to x509: OpaquePointer) throws(CryptoError) {
        guard let object = OBJ_txt2obj(ext.objectIdentifier.description, 1) else { throw OpenSSLErrorQueue.failure("OBJ_txt2obj") }
        defer { ASN1_OBJECT_free(object) }
        guard let value = ASN1_OCTET_STRING_new() else { throw OpenSSLErrorQueue.failure("ASN1_OCTET_STRING_new") }
        defer { ASN1_OCTET_STRING_free(value) }
        guard ASN1_OCTET_STRING_set(value, ext.valueDER, Int32(ext.valueDER.count)) == 1,
            let created = X509_EXTENSION_create_by_OBJ(nil, object, ext.isCritical ? 1 : 0, value)
        else { throw OpenSSLErrorQueue.failure("X509_EXTENSION_create_by_OBJ") }
        defer { X509_EXTENSION_free(created) }
        guard X509_add_ext(x509, created, -1) == 1 else { throw OpenSSLErrorQueue.failure("X509_add_ext") }
    }
}
