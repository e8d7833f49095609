import COpenSSL
import COpenSSLShim
import Foundation

/// X.509 path validation through OpenSSL's `X509_verify_cert`, against explicitly given trust anchors only.
///
/// Anchors never come from the material being verified: certificates carried by a token are passed as
/// `intermediates` (untrusted) and cannot become anchors, so a self-signed root shipped inside a token is useless.
public enum CertificateChainVerifier {
    /// Validates `leaf` → `intermediates` → one of `trustAnchors`.
    ///
    /// - Parameter time: the instant at which validity periods are checked; nil skips validity periods entirely
    ///   (for callers that cache the time-independent result and check the periods themselves).
    /// - Returns: the validated chain, leaf first, anchor last.
    @discardableResult
    public static func verify(
        leaf: Certificate, intermediates: [Certificate], trustAnchors: [Certificate], at time: Date?
    ) throws(CryptoError) -> [Certificate] {
        guard let store = X509_STORE_new() else { throw OpenSSLErrorQueue.failure("X509_STORE_new") }
        defer { X509_STORE_free(store) }
        for anchor in trustAnchors {
            guard X509_STORE_add_cert(store, anchor.handle.pointer) == 1 else { throw OpenSSLErrorQueue.failure("X509_STORE_add_cert") }
        }
        guard let untrusted = paypipe_sk_x509_new_null() else { throw OpenSSLErrorQueue.failure("sk_X509_new_null") }
        defer { paypipe_sk_x509_free(untrusted) }  // frees the stack only; the certificates stay owned by their handles
        for certificate in intermediates {
            guard paypipe_sk_x509_push(untrusted, certificate.handle.pointer) > 0 else { throw OpenSSLErrorQueue.failure("sk_X509_push") }
        }
        guard let context = X509_STORE_CTX_new() else { throw OpenSSLErrorQueue.failure("X509_STORE_CTX_new") }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf.handle.pointer, untrusted) == 1,
            let parameters = X509_STORE_CTX_get0_param(context)
        else { throw OpenSSLErrorQueue.failure("X509_STORE_CTX_init") }
        if let time {
            X509_VERIFY_PARAM_set_time(parameters, time_t(time.timeIntervalSince1970.rounded(.down)))
        } else {
            guard X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_NO_CHECK_TIME)) == 1 else {
                throw OpenSSLErrorQueue.failure("X509_VERIFY_PARAM_set_flags")
            }
        }
        guard X509_verify_cert(context) == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            OpenSSLErrorQueue.clear()
            let reason = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
            throw .certificateVerificationFailed(reason)
        }
        let fingerprints = [leaf] + intermediates + trustAnchors
        guard let chain = X509_STORE_CTX_get0_chain(context) else { throw OpenSSLErrorQueue.failure("X509_STORE_CTX_get0_chain") }
        var result: [Certificate] = []
        for index in 0..<paypipe_sk_x509_num(chain) {
            guard let x509 = paypipe_sk_x509_value(chain, index) else { continue }
            // Map back to the callers' objects instead of wrapping (and then double-freeing) OpenSSL's pointers.
            guard let known = fingerprints.first(where: { $0.handle.pointer == x509 }) else {
                throw .certificateVerificationFailed("chain contains an unexpected certificate")
            }
            result.append(known)
        }
        return result
    }
}
