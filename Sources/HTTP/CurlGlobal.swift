import CCurl

/// Process-wide libcurl initialisation.
///
/// `curl_global_init` is not thread-safe and must run once before any other libcurl call. A `static let` is
/// initialised lazily exactly once under the runtime's `swift_once`, which gives that guarantee without any mutable
/// global state of our own. libcurl is never de-initialised: handles may live until process exit.
enum CurlGlobal {
    /// Whether `curl_global_init` succeeded. Read it before creating the first easy handle.
    static let isInitialized: Bool = curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
}
