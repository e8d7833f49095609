import CMicroHTTPD
import CPayPipeShim

/// Everything libmicrohttpd's callbacks need, passed to the daemon as an unretained pointer.
///
/// `HTTPServer` owns it and stops the daemon (which joins its threads) before releasing it, so the pointer is valid
/// whenever a callback runs. Immutable, hence `Sendable`: the callbacks run on several pool threads at once.
final class HTTPServerContext: Sendable {
    let handler: @Sendable (HTTPServerRequest) -> HTTPServerResponse
    let maxBodyBytes: Int

    init(maxBodyBytes: Int, handler: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse) {
        self.handler = handler
        self.maxBodyBytes = maxBodyBytes
    }

    /// One access-handler call. libmicrohttpd calls it (1) once the headers are parsed, with no state yet, (2) once
    /// per received body chunk, (3) once more with no data when the body is complete; the response may be queued
    /// in (1) or (3) only.
    private func handle(
        connection: OpaquePointer,
        url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?,
        uploadDataSize: UnsafeMutablePointer<Int>,
        requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let slot = requestSlot.pointee else {
            let state = HTTPServerRequestState()
            requestSlot.pointee = Unmanaged.passRetained(state).toOpaque()
            if let declared = declaredContentLength(connection), declared > maxBodyBytes {
                // Refuse before the upload: libmicrohttpd then skips the body and closes the connection after the
                // response, and a client that sent `Expect: 100-continue` never uploads it at all.
                state.hasResponded = true
                return Self.queue(Self.payloadTooLarge, on: connection)
            }
            return .YES
        }
        let state = Unmanaged<HTTPServerRequestState>.fromOpaque(slot).takeUnretainedValue()
        if state.hasResponded {
            uploadDataSize.pointee = 0
            return .YES
        }
        if uploadDataSize.pointee > 0 {
            let chunk = UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee)
            if !state.isOversized, state.body.count + chunk.count <= maxBodyBytes {
                state.body.append(contentsOf: chunk)
            } else {
                // Chunked uploads declare no length: keep reading (so the 413 can be delivered), keep nothing.
                state.isOversized = true
                state.body = []
            }
            uploadDataSize.pointee = 0
            return .YES
        }
        state.hasResponded = true
        if state.isOversized {
            return Self.queue(Self.payloadTooLarge, on: connection)
        }
        let query = MHDValueCollector.collect(.GET_ARGUMENT_KIND, from: connection)
        let request = HTTPServerRequest(
            method: method.map { String(cString: $0) } ?? "",
            path: url.map { String(cString: $0) } ?? "/",
            query: Dictionary(query, uniquingKeysWith: { first, _ in first }),
            headers: MHDValueCollector.collect(.HEADER_KIND, from: connection).map { HTTPHeader(name: $0.key, value: $0.value) },
            body: state.body,
            remoteAddress: paypipe_mhd_client_address(connection).flatMap(SocketAddressText.format)
        )
        state.body = []
        return Self.queue(handler(request), on: connection)
    }

    private func declaredContentLength(_ connection: OpaquePointer) -> Int? {
        MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length")
            .flatMap { Int(String(cString: $0)) }
    }

    private static let payloadTooLarge = HTTPServerResponse.text("request body too large\n", status: 413)
    private static let invalidResponse = HTTPServerResponse.text("handler produced an invalid response\n", status: 500)

    /// Hands `response` to libmicrohttpd (which copies the body). A handler header that cannot be sent safely
    /// (CR/LF injection, bad name) turns the response into a 500 rather than being dropped silently. Fields with an
    /// empty value are omitted: libmicrohttpd 0.9 refuses them.
    private static func queue(_ response: HTTPServerResponse, on connection: OpaquePointer) -> MHD_Result {
        // MHD_NO from the access handler makes libmicrohttpd close the connection without answering.
        if response.abortsConnection { return .NO }
        guard (100...999).contains(response.status), response.headers.allSatisfy(\.isWireSafe) else {
            return queue(invalidResponse, on: connection)
        }
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse = created else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for header in response.headers where !header.value.isEmpty
            && MHD_add_response_header(mhdResponse, header.name, header.value) != .YES {
            return queue(invalidResponse, on: connection)
        }
        return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    }

    // MARK: C callbacks (static, non-isolated: libmicrohttpd calls them on its pool threads)

    static let accessHandler: MHD_AccessHandlerCallback = {
        context, connection, url, method, _, uploadData, uploadDataSize, requestSlot in
        guard let context, let connection, let uploadDataSize, let requestSlot else { return .NO }
        return Unmanaged<HTTPServerContext>.fromOpaque(context).takeUnretainedValue().handle(
            connection: connection, url: url, method: method, uploadData: uploadData,
            uploadDataSize: uploadDataSize, requestSlot: requestSlot)
    }

    static let requestCompleted: MHD_RequestCompletedCallback = { _, _, requestSlot, _ in
        guard let requestSlot, let slot = requestSlot.pointee else { return }
        Unmanaged<HTTPServerRequestState>.fromOpaque(slot).release()
        requestSlot.pointee = nil
    }
}

/// Per-request state kept in libmicrohttpd's `con_cls` slot between access-handler calls.
///
/// Created on the first call for a request (headers parsed), retained through `Unmanaged` and released in the
/// request-completed callback. libmicrohttpd drives one request on one thread at a time, so no locking is needed.
final class HTTPServerRequestState {
    var body: [UInt8] = []
    /// The body exceeded the limit: the rest is read and discarded, then 413 is sent.
    var isOversized = false
    /// A response has been queued already (early 413); ignore further calls.
    var hasResponded = false
}

/// Collects libmicrohttpd key/value pairs (headers, query arguments) of one connection.
final class MHDValueCollector {
    private(set) var pairs: [(key: String, value: String)] = []

    /// Every pair of `kind`, in the order libmicrohttpd stored them (wire order).
    static func collect(_ kind: MHD_ValueKind, from connection: OpaquePointer) -> [(key: String, value: String)] {
        let collector = MHDValueCollector()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(
                connection, kind, Self.append, Unmanaged.passUnretained(collector).toOpaque())
        }
        return collector.pairs
    }

    private static let append: MHD_KeyValueIterator = { context, _, key, value in
        guard let context, let key else { return .YES }
        let collector = Unmanaged<MHDValueCollector>.fromOpaque(context).takeUnretainedValue()
        collector.pairs.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
        return .YES
    }
}
