import CCurl

extension HTTPClientError {
    /// Classifies a failed libcurl transfer.
    ///
    /// "Sent" comes from CURLINFO_REQUEST_SIZE (bytes of request headers libcurl managed to write), which stays 0 when
    /// the failure happened during DNS, connect or TLS set-up. Failures that happen while *reading* the response
    /// (reset, empty reply, truncated body) imply the request went out, whatever the counter says.
    init(
        curlCode code: CURLcode,
        message: String,
        requestBytesSent: Bool,
        exceededResponseLimit: Bool,
        refusedResend: Bool,
        gateRefusal: String? = nil
    ) {
        if code == CURLE_ABORTED_BY_CALLBACK, let gateRefusal {
            // The gate refused libcurl's resend of a request an earlier connection already carried (its bytes are
            // counted): that earlier write may have been processed, so the outcome is uncertain, not "not sent".
            self = requestBytesSent ? .connectionReset(afterSending: true) : .refusedBeforeSending(gateRefusal)
            return
        }
        switch code {
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            self = .invalidRequest(message)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            self = .couldNotConnect(message)
        case CURLE_OPERATION_TIMEDOUT:
            self = .timedOut(afterSending: requestBytesSent)
        case CURLE_SEND_ERROR:
            self = .connectionReset(afterSending: requestBytesSent)
        case CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE:
            self = .connectionReset(afterSending: true)
        case CURLE_ABORTED_BY_CALLBACK where refusedResend:
            self = .connectionReset(afterSending: true)
        case CURLE_WRITE_ERROR where exceededResponseLimit, CURLE_FILESIZE_EXCEEDED:
            self = .tooLarge
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            // A TLS error after request bytes went out is a broken connection, not a set-up failure.
            self = requestBytesSent ? .connectionReset(afterSending: true) : .tls(message)
        default:
            self = .other(code: Int(code.rawValue), message: message)
        }
    }
}
