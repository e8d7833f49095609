import CCurl
import CPayPipeShim

/// A blocking HTTP/1.1 client over one libcurl easy handle.
///
/// The handle is reused for every request, so libcurl keeps the connection alive (and its TLS session) between
/// requests to the same host: that is what makes sequential gateway calls cheap. A libcurl handle must not be used
/// from two threads at once, hence the class is deliberately not `Sendable`: give each worker thread its own client.
///
/// Every failure is classified by whether the request may have reached the server (`HTTPClientError`), and
/// libcurl's silent resend of non-idempotent requests on a dead keep-alive connection is refused (see
/// `CurlTransfer`), so a POST is never written twice by this client.
public final class HTTPClient {
    public let configuration: HTTPClientConfiguration
    private let handle: UnsafeMutableRawPointer
    /// CURLOPT_ERRORBUFFER: libcurl keeps this pointer, so the client owns the buffer for the handle's lifetime.
    private let errorBuffer: UnsafeMutablePointer<CChar>

    /// Methods libcurl may transparently resend after a dead keep-alive connection (RFC 9110 safe methods).
    private static let resendableMethods: Set<String> = ["GET", "HEAD", "OPTIONS"]

    public init(configuration: HTTPClientConfiguration = HTTPClientConfiguration()) {
        precondition(CurlGlobal.isInitialized, "curl_global_init failed")
        guard let handle = curl_easy_init() else {
            fatalError("curl_easy_init failed (out of memory)")
        }
        self.configuration = configuration
        self.handle = handle
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        self.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Performs `request` and returns the final response, whatever its status (3xx/4xx/5xx are responses, not
    /// errors). Blocks the calling thread for at most the request's total timeout (else `configuration.totalTimeout`).
    public func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
        try Self.validate(request)
        let headerList = try CurlHeaderList(request.headers, removing: Self.suppressedDefaultHeaders(for: request))
        let transfer = CurlTransfer(
            handle: handle,
            maxResponseBytes: configuration.maxResponseBytes,
            blocksResend: !Self.resendableMethods.contains(request.method),
            sendGate: request.sendGate
        )
        // Start from a clean handle each time so no option of a previous request (method, body, headers) leaks into
        // this one. curl_easy_reset keeps live connections, the DNS cache and TLS sessions.
        curl_easy_reset(handle)
        errorBuffer[0] = 0

        let code = withExtendedLifetime((headerList, transfer)) { () -> CURLcode in
            // POSTFIELDS is not copied by libcurl: the body must stay pinned for the whole perform. An empty body
            // still needs a non-NULL pointer, or libcurl would read the request body from stdin.
            let body = request.body.isEmpty ? [0] : request.body
            let code = body.withUnsafeBufferPointer { bodyBuffer -> CURLcode in
                let prepared = firstFailure([
                    applyConfiguration(request),
                    transfer.install(),
                    setPointer(CURLOPT_HTTPHEADER, headerList.pointer),
                    applyMethod(request, body: bodyBuffer.baseAddress!),
                    setString(CURLOPT_URL, request.url),
                ])
                return prepared != CURLE_OK ? prepared : curl_easy_perform(handle)
            }
            // Interop pitfall 7: the handle keeps these pointers; clear them before the memory goes away.
            _ = setPointer(CURLOPT_HTTPHEADER, nil)
            _ = setPointer(CURLOPT_POSTFIELDS, nil)
            return code
        }

        guard code == CURLE_OK else {
            throw HTTPClientError(
                curlCode: code,
                message: errorMessage(for: code),
                requestBytesSent: longInfo(CURLINFO_REQUEST_SIZE) > 0,
                exceededResponseLimit: transfer.exceededResponseLimit,
                refusedResend: transfer.refusedResend,
                gateRefusal: transfer.gateRefusal
            )
        }
        var totalTime = 0.0
        _ = paypipe_curl_getinfo_double(handle, CURLINFO_TOTAL_TIME, &totalTime)
        return HTTPResponse(
            status: longInfo(CURLINFO_RESPONSE_CODE),
            headers: transfer.headers,
            body: transfer.body,
            totalTime: totalTime
        )
    }

    // MARK: Request set-up

    private static func validate(_ request: HTTPRequest) throws(HTTPClientError) {
        guard !request.method.isEmpty, request.method.utf8.allSatisfy(HTTPHeader.isTokenCharacter) else {
            throw .invalidRequest("method is not an HTTP token")
        }
        guard request.url.hasPrefix("http://") || request.url.hasPrefix("https://") else {
            throw .invalidRequest("URL scheme must be http or https")
        }
        if let bad = request.headers.first(where: { !$0.isWireSafe }) {
            throw .invalidRequest("header \"\(bad.name.prefix(40))\" has an invalid name or a CR/LF/NUL in its value")
        }
    }

    /// libcurl labels every POSTFIELDS body `application/x-www-form-urlencoded`, which mislabels JSON: drop it
    /// unless the caller set a Content-Type. (libcurl's `Expect: 100-continue`, added only above 1 MiB in 7.88, is
    /// kept: it lets a server refuse an oversized body before it is uploaded.)
    private static func suppressedDefaultHeaders(for request: HTTPRequest) -> [String] {
        request.headers.contains(name: "Content-Type") ? [] : ["Content-Type"]
    }

    private func applyConfiguration(_ request: HTTPRequest) -> CURLcode {
        firstFailure([
            setPointer(CURLOPT_ERRORBUFFER, errorBuffer),
            // Required in multi-threaded programs: no SIGALRM-based DNS timeouts.
            setLong(CURLOPT_NOSIGNAL, 1),
            setLong(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout ?? configuration.connectTimeout)),
            setLong(CURLOPT_TIMEOUT_MS, Self.milliseconds(request.totalTimeout ?? configuration.totalTimeout)),
            setString(CURLOPT_PROTOCOLS_STR, "http,https"),
            setString(CURLOPT_REDIR_PROTOCOLS_STR, "http,https"),
            setLong(CURLOPT_FOLLOWLOCATION, configuration.followRedirects ? 1 : 0),
            setLong(CURLOPT_MAXREDIRS, configuration.maxRedirects),
            setLong(CURLOPT_SSL_VERIFYPEER, configuration.verifyPeer ? 1 : 0),
            setLong(CURLOPT_SSL_VERIFYHOST, configuration.verifyPeer ? 2 : 0),
            configuration.caCertificatePath.map { setString(CURLOPT_CAINFO, $0) } ?? CURLE_OK,
            configuration.clientCertificatePath.map { setString(CURLOPT_SSLCERT, $0) } ?? CURLE_OK,
            configuration.clientKeyPath.map { setString(CURLOPT_SSLKEY, $0) } ?? CURLE_OK,
            // Fails early on a declared Content-Length over the limit; the write callback covers chunked bodies.
            paypipe_curl_setopt_offset(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(configuration.maxResponseBytes)),
        ])
    }

    private func applyMethod(_ request: HTTPRequest, body: UnsafePointer<UInt8>) -> CURLcode {
        switch request.method {
        case "GET" where request.body.isEmpty:
            return setLong(CURLOPT_HTTPGET, 1)
        case "HEAD" where request.body.isEmpty:
            return setLong(CURLOPT_NOBODY, 1)
        default:
            return firstFailure([
                setLong(CURLOPT_POST, 1),
                paypipe_curl_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)),
                setPointer(CURLOPT_POSTFIELDS, body),
                request.method == "POST" ? CURLE_OK : setString(CURLOPT_CUSTOMREQUEST, request.method),
            ])
        }
    }

    // MARK: libcurl helpers

    private func setLong(_ option: CURLoption, _ value: Int) -> CURLcode {
        paypipe_curl_setopt_long(handle, option, value)
    }

    private func setPointer(_ option: CURLoption, _ value: UnsafeRawPointer?) -> CURLcode {
        paypipe_curl_setopt_pointer(handle, option, value)
    }

    /// libcurl copies string options (all but POSTFIELDS), so a temporary C string is fine here.
    private func setString(_ option: CURLoption, _ value: String) -> CURLcode {
        paypipe_curl_setopt_pointer(handle, option, value)
    }

    private func longInfo(_ info: CURLINFO) -> Int {
        var value = 0
        return paypipe_curl_getinfo_long(handle, info, &value) == CURLE_OK ? value : 0
    }

    private func errorMessage(for code: CURLcode) -> String {
        errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
    }

    private func firstFailure(_ codes: [CURLcode]) -> CURLcode {
        codes.first(where: { $0 != CURLE_OK }) ?? CURLE_OK
    }

    private static func milliseconds(_ seconds: Double) -> Int {
        max(1, Int((seconds * 1000).rounded(.up)))
    }
}

@available(*, unavailable, message: "A libcurl easy handle must be used from one thread: create one client per thread")
extension HTTPClient: Sendable {}
