import Crypto

/// A pinned trust anchor for Apple Pay signature chains.
///
/// Production uses the embedded Apple Root CA - G3, whose SHA-256 fingerprint is checked when it is loaded. Sandbox
/// runs pass their own root explicitly (PAYPIPE_APPLEPAY_TRUST_ROOT): there is no way to trust a root carried in a
/// token.
public struct TrustRoot: Sendable {
    public let certificate: Certificate

    /// SHA-256 of the root certificate's DER.
    public var fingerprintSHA256: [UInt8] { certificate.fingerprintSHA256 }

    /// Loads a root from PEM.
    public init(pem: String) throws(ApplePayError) {
        do {
            self.certificate = try Certificate(pem: pem)
        } catch {
            throw .certificateInvalid("trust root is not a PEM certificate")
        }
    }

    /// Loads a root from PEM and requires its SHA-256 fingerprint to equal `pinnedFingerprintSHA256`.
    public init(pem: String, pinnedFingerprintSHA256: [UInt8]) throws(ApplePayError) {
        try self.init(pem: pem)
        guard certificate.fingerprintSHA256 == pinnedFingerprintSHA256 else {
            throw .certificateInvalid("trust root fingerprint does not match the pinned value")
        }
    }

    public init(certificate: Certificate) {
        self.certificate = certificate
    }

    /// 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79
    public static let appleRootCAG3FingerprintSHA256: [UInt8] =
        Hex.decode("63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179")!

    /// Apple Root CA - G3 (P-384, 2014-04-30 … 2039-04-30), embedded and fingerprint-checked.
    public static let appleRootCAG3: TrustRoot = {
        do {
            return try TrustRoot(pem: appleRootCAG3PEM, pinnedFingerprintSHA256: appleRootCAG3FingerprintSHA256)
        } catch {
            // The PEM is a compile-time constant: a mismatch means the binary was tampered with or mis-built.
            fatalError("embedded Apple Root CA - G3 failed its fingerprint check: \(error)")
        }
    }()

    static let appleRootCAG3PEM = """
-----BEGIN CERTIFICATE-----
MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
6BgD56KyKA==
-----END CERTIFICATE-----
"""
}
