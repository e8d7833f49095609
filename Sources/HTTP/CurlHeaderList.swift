import CCurl

/// An owned `curl_slist` of `Name: value` lines for CURLOPT_HTTPHEADER.
///
/// libcurl keeps the list *pointer* (not a copy) on the easy handle, even across transfers (interop pitfall 7):
/// the owner must reset CURLOPT_HTTPHEADER before this list is deallocated. `HTTPClient.send` does that.
final class CurlHeaderList {
    private(set) var pointer: UnsafeMutablePointer<curl_slist>?

    /// - Parameters:
    ///   - headers: sent as given; an empty value is sent as an empty field (libcurl syntax `Name;`).
    ///   - removing: names of headers libcurl would add on its own and must not (libcurl syntax `Name:`).
    init(_ headers: [HTTPHeader], removing removed: [String] = []) throws(HTTPClientError) {
        let lines = headers.map { $0.value.isEmpty ? "\($0.name);" : "\($0.name): \($0.value)" } + removed.map { "\($0):" }
        for line in lines {
            guard let appended = curl_slist_append(pointer, line) else {
                throw .other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "out of memory building the header list")
            }
            pointer = appended
        }
    }

    deinit {
        curl_slist_free_all(pointer)
    }
}
