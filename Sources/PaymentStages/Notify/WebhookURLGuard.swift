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
