import CCurl
import CPayPipeShim

/// Process-wide libcurl initialisation.
///
/// `curl_global_init` is not thread-safe and must run once before any other libcurl call. A `static let` is
/// initialised lazily exactly once under the runtime's `swift_once`, which gives that guarantee without any mutable
/// global state of our own. libcurl is never de-initialised: handles may live until process exit.
enum CurlGlobal {
    /// Whether `curl_global_init` succeeded. Read it before creating the first easy handle.
    static let isInitialized: Bool = curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
}

/// Per-transfer state shared with libcurl's callbacks through an unretained pointer (CURLOPT_WRITEDATA,
/// CURLOPT_HEADERDATA, CURLOPT_PREREQDATA). It lives on the stack frame of `HTTPClient.send`, which keeps it alive
/// for the whole `curl_easy_perform`; only the calling thread touches it.
final class CurlTransfer {
    private let handle: UnsafeMutableRawPointer
    private let maxResponseBytes: Int
    private let blocksResend: Bool
    private let sendGate: HTTPSendGate?

    private(set) var body: [UInt8] = []
    private(set) var headers: [HTTPHeader] = []
    /// Set when the write callback refused data because of `maxResponseBytes`.
    private(set) var exceededResponseLimit = false
    /// Set when libcurl wanted to resend an already-sent request on a new connection and we refused.
    private(set) var refusedResend = false
    /// Set when the request's `HTTPSendGate` refused the connected peer: the reason.
    private(set) var gateRefusal: String?

    private var attempts = 0
    private var redirectsAtLastAttempt = 0
    private var requestBytesAtLastAttempt = 0

    /// - Parameter blocksResend: refuse libcurl's silent resend of a request that was already written to a reused
    ///   connection (see `allowsAttempt()`); set for non-idempotent methods.
    init(handle: UnsafeMutableRawPointer, maxResponseBytes: Int, blocksResend: Bool, sendGate: HTTPSendGate? = nil) {
        self.handle = handle
        self.maxResponseBytes = maxResponseBytes
        self.blocksResend = blocksResend
        self.sendGate = sendGate
    }

    /// Points libcurl's body, header and pre-request callbacks at this object.
    func install() -> CURLcode {
        let context = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        for code in [
            paypipe_curl_setopt_write_function(handle, Self.writeBody),
            paypipe_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context),
            paypipe_curl_setopt_header_function(handle, Self.writeHeader),
            paypipe_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context),
            paypipe_curl_setopt_prereq_function(handle, Self.beforeRequest),
            paypipe_curl_setopt_pointer(handle, CURLOPT_PREREQDATA, context),
        ] where code != CURLE_OK {
            return code
        }
        return CURLE_OK
    }

    /// Decides whether libcurl may send the request (again).
    ///
    /// libcurl silently resends a request when a *reused* keep-alive connection dies before any response byte
    /// arrives (`Curl_retry_request`, up to 5 times, for every method). That is right when the old connection was
    /// already dead, but if the request had been written the server may have processed it (a gateway that crashed
    /// or a proxy that reset the connection mid-request): resending a payment then risks charging twice. So for
    /// non-idempotent requests a second attempt of the same hop is allowed only when the first one wrote no
    /// request bytes; otherwise the transfer aborts and `send` reports `connectionReset(afterSending: true)`.
    private func allowsAttempt() -> Bool {
        attempts += 1
        let redirects = longInfo(CURLINFO_REDIRECT_COUNT)
        let requestBytes = longInfo(CURLINFO_REQUEST_SIZE)
        defer {
            redirectsAtLastAttempt = redirects
            requestBytesAtLastAttempt = requestBytes
        }
        let isRetryOfSameHop = attempts > 1 && redirects == redirectsAtLastAttempt
        guard blocksResend, isRetryOfSameHop, requestBytes > requestBytesAtLastAttempt else {
            return true
        }
        refusedResend = true
        return false
    }

    /// The send gate's verdict on the connected peer (libcurl passes its numeric address and port).
    private func gateAllows(ip: UnsafeMutablePointer<CChar>?, port: Int32) -> Bool {
        guard let sendGate else { return true }
        let peer = HTTPConnectedPeer(ip: ip.map { String(cString: $0) } ?? "", port: Int(port))
        guard let refusal = sendGate.check(peer) else { return true }
        gateRefusal = refusal
        return false
    }

    private func longInfo(_ info: CURLINFO) -> Int {
        var value = 0
        return paypipe_curl_getinfo_long(handle, info, &value) == CURLE_OK ? value : 0
    }

    private func appendBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard body.count + bytes.count <= maxResponseBytes else {
            exceededResponseLimit = true
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    /// One raw header line. A status line starts a new response (interim 1xx, or the next redirect hop), so only the
    /// final response's fields are kept.
    private func appendHeaderLine(_ line: UnsafeRawBufferPointer) {
        switch HTTPHeaderLine.parse(line) {
        case .statusLine: headers.removeAll(keepingCapacity: true)
        case .field(let header): headers.append(header)
        case .ignored: break
        }
    }

    private static func transfer(_ context: UnsafeMutableRawPointer?) -> CurlTransfer {
        Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
    }

    // MARK: C callbacks (static, non-isolated: libcurl calls them on the thread running curl_easy_perform)

    static let writeBody: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, context in
        let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
        // Returning less than the chunk size makes libcurl abort with CURLE_WRITE_ERROR.
        return transfer(context).appendBody(bytes) ? bytes.count : 0
    }

    static let writeHeader: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, context in
        let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
        transfer(context).appendHeaderLine(bytes)
        return bytes.count
    }

    static let beforeRequest: @convention(c) (
        UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32
    ) -> Int32 = { context, primaryIP, _, primaryPort, _ in
        let transfer = transfer(context)
        // The resend check first: once a write of this request may have reached the server, no later refusal (the
        // send gate's included) may be reported as "not sent".
        return transfer.allowsAttempt() && transfer.gateAllows(ip: primaryIP, port: primaryPort)
            ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT
    }
}
