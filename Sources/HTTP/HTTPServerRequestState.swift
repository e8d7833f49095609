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
