/// One raw header line of an HTTP response as libcurl hands it over, parsed: the peer's bytes, so any sequence must
/// parse without trapping (fuzzed: Sources/FuzzTargets, surface `webhookResponse`).
public enum HTTPHeaderLine: Equatable, Sendable {
    /// `HTTP/…`: a new response starts (an interim 1xx, or the next redirect hop).
    case statusLine
    case field(HTTPHeader)
    /// No colon (the blank line ending the block, or garbage): nothing to keep.
    case ignored

    public static func parse(_ line: some Collection<UInt8>) -> HTTPHeaderLine {
        var bytes = Array(line)[...]
        while let last = bytes.last, last == UInt8(ascii: "\r") || last == UInt8(ascii: "\n") {
            bytes = bytes.dropLast()
        }
        if bytes.starts(with: "HTTP/".utf8) { return .statusLine }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return .ignored }
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var value = bytes[(colon + 1)...]
        while let first = value.first, isSpace(first) { value = value.dropFirst() }
        while let last = value.last, isSpace(last) { value = value.dropLast() }
        return .field(HTTPHeader(name: String(decoding: bytes[..<colon], as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
    }
}
