import Foundation
import HTTP
#if canImport(Glibc)
import Glibc
#endif

/// SSRF guard for webhook targets: a merchant-controlled URL must not make PayPipe reach its own network
/// (databases, broker, cloud metadata). A URL is refused unless it is http(s) and **every** address its host
/// resolves to is public (``IPAddress/isInternal``); resolution uses getaddrinfo like libcurl does.
///
/// libcurl resolves again when sending, so a DNS-rebinding host could change its answer in between: ``sendGate``
/// therefore checks the address libcurl actually connected to, with the same rule, right before any request byte is
/// written (``HTTPSendGate``), and the POST is refused there. Production deployments should still send through an
/// egress proxy or an isolated network, as the Standard Webhooks spec recommends.
public struct WebhookURLGuard: Sendable {
    /// Allow loopback/private targets: `PAYPIPE_WEBHOOK_ALLOW_PRIVATE=1`, the default in sandbox.
    public let allowPrivate: Bool
    let resolve: @Sendable (String) -> [IPAddress]

    public init(allowPrivate: Bool, resolve: @escaping @Sendable (String) -> [IPAddress] = WebhookURLGuard.resolve) {
        self.allowPrivate = allowPrivate
        self.resolve = resolve
    }

    public enum Verdict: Sendable, Equatable {
        case allowed
        /// Refused, with a reason for `webhook_deliveries.error` (never the resolved address list in full).
        case refused(String)
    }

    public func check(_ urlText: String) -> Verdict {
        guard let url = URLComponents(string: urlText), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              var host = url.host, !host.isEmpty else {
            return .refused("not an http(s) URL")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if allowPrivate { return .allowed }
        let addresses = IPAddress(host).map { [$0] } ?? resolve(host)
        guard !addresses.isEmpty else { return .refused("host does not resolve") }
        if let blocked = addresses.first(where: \.isInternal) {
            return .refused("host resolves to internal address \(blocked)")
        }
        return .allowed
    }

    /// The connected-address check for the POST itself (`nil` when private targets are allowed): refuses a peer whose
    /// address is internal, or not an IP address at all (a Unix socket or a proxy would hide the real peer).
    public var sendGate: HTTPSendGate? {
        guard !allowPrivate else { return nil }
        return HTTPSendGate { peer in
            guard let address = IPAddress(peer.ip) else { return "connected to unverifiable peer '\(peer.ip.prefix(64))'" }
            return address.isInternal ? "connected to internal address \(address)" : nil
        }
    }

    /// All addresses getaddrinfo returns for `host` (empty on failure).
    @Sendable public static func resolve(_ host: String) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let sockaddr = entry.pointee.ai_addr {
                switch entry.pointee.ai_family {
                case AF_INET:
                    let address = UnsafeRawPointer(sockaddr).load(as: sockaddr_in.self).sin_addr
                    addresses.append(.v4(withUnsafeBytes(of: address) { Array($0) }))
                case AF_INET6:
                    let address = UnsafeRawPointer(sockaddr).load(as: sockaddr_in6.self).sin6_addr
                    addresses.append(.v6(withUnsafeBytes(of: address) { Array($0) }))
                default:
                    break
                }
            }
            cursor = entry.pointee.ai_next
        }
        return addresses
    }
}

/// A resolved IP address, reduced to what the SSRF guard needs: its family and raw bytes.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4([UInt8])
    case v6([UInt8])

    /// Parses a numeric address (`10.0.0.1`, `::1`, `fe80::1`); `nil` for anything else (host names).
    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = .v4(withUnsafeBytes(of: &v4) { Array($0) })
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self = .v6(withUnsafeBytes(of: &v6) { Array($0) })
            return
        }
        return nil
    }

    /// Addresses a webhook must not reach from production: loopback, RFC 1918 private, carrier-grade NAT, link-local
    /// (169.254/16 holds cloud metadata endpoints), unspecified, benchmarking, multicast and reserved ranges, and
    /// their IPv6 counterparts (`::1`, `fc00::/7`, `fe80::/10`, `ff00::/8`). IPv4-mapped (`::ffff:a.b.c.d`),
    /// IPv4-translated (`::ffff:0:a.b.c.d`) and well-known NAT64 (`64:ff9b::/96`) addresses are judged by the IPv4
    /// address they embed, so `::ffff:127.0.0.1` cannot slip through; IPv4-compatible `::a.b.c.d` (deprecated) and the
    /// local-use NAT64 prefix `64:ff9b:1::/48` (RFC 8215, translated by the operator's own gateway) are internal.
    public var isInternal: Bool {
        switch self {
        case .v4(let b):
            guard b.count == 4 else { return true }
            switch (b[0], b[1]) {
            case (0, _), (10, _), (127, _): return true
            case (100, 64...127): return true        // 100.64.0.0/10 carrier-grade NAT
            case (169, 254): return true             // link-local, cloud metadata
            case (172, 16...31): return true
            case (192, 168): return true
            case (192, 0) where b[2] == 0: return true  // 192.0.0.0/24 IETF protocol assignments
            case (198, 18...19): return true         // benchmarking
            case (224...255, _): return true         // multicast, reserved, broadcast
            default: return false
            }
        case .v6(let b):
            guard b.count == 16 else { return true }
            if b.allSatisfy({ $0 == 0 }) { return true }                               // ::
            if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return true }          // ::1
            if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff {    // ::ffff:a.b.c.d
                return IPAddress.v4(Array(b[12..<16])).isInternal
            }
            if b[0..<12] == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] {           // 64:ff9b::/96 NAT64
                return IPAddress.v4(Array(b[12..<16])).isInternal
            }
            if b[0..<8].allSatisfy({ $0 == 0 }) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0 {
                return IPAddress.v4(Array(b[12..<16])).isInternal                       // ::ffff:0:a.b.c.d IPv4-translated
            }
            if b[0..<12].allSatisfy({ $0 == 0 }) { return true }                        // ::a.b.c.d IPv4-compatible (deprecated, never public)
            if b[0..<6] == [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01] { return true }         // 64:ff9b:1::/48 local-use NAT64
            if b[0] & 0xfe == 0xfc { return true }                                      // fc00::/7 unique local
            if b[0] == 0xfe && b[1] & 0xc0 == 0x80 { return true }                      // fe80::/10 link-local
            if b[0] == 0xfe && b[1] & 0xc0 == 0xc0 { return true }                      // fec0::/10 site-local (deprecated)
            if b[0] == 0xff { return true }                                             // multicast
            return false
        }
    }

    public var description: String {
        switch self {
        case .v4(let b): return b.map(String.init).joined(separator: ".")
        case .v6(let b):
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let text = b.withUnsafeBytes { raw in inet_ntop(AF_INET6, raw.baseAddress, &buffer, socklen_t(buffer.count)) }
            guard text != nil else { return "invalid" }
            return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}
