import Foundation

/// Which URLs may carry card data (the gateway's `baseUrl`, and any future connector URL): `https://` only, outside
/// sandbox without exception. Sandbox may also use plain `http://` to loopback and to the hosts listed in
/// `PAYPIPE_SANDBOX_PLAIN_HTTP_HOSTS` (docker compose lists `gateway-sim`). `PAYPIPE_ALLOW_INSECURE_TRANSPORT`, which
/// lifts the TLS rule for the broker and the database behind a service mesh, does not apply here: card data is
/// encrypted end to end to the acquirer's own TLS endpoint, never by the network underneath.
///
/// Checked where a URL enters (`paypipe merchant apply` refuses the document) and where bytes would leave (the
/// gateway client refuses to send), so a document applied before the rule existed cannot send either.
public struct CardDataTransportPolicy: Sendable, Equatable {
    public static let plainHTTPHostsVariable = "PAYPIPE_SANDBOX_PLAIN_HTTP_HOSTS"

    public let deployment: DeploymentEnvironment
    /// Lower-cased host names sandbox may reach over plain HTTP besides loopback (ignored outside sandbox).
    public let sandboxPlainHTTPHosts: Set<String>

    public init(deployment: DeploymentEnvironment, sandboxPlainHTTPHosts: Set<String> = []) {
        self.deployment = deployment
        self.sandboxPlainHTTPHosts = Set(sandboxPlainHTTPHosts.map { $0.lowercased() })
    }

    /// Production's rule: https only.
    public static let strict = CardDataTransportPolicy(deployment: .production)

    /// `PAYPIPE_SANDBOX_PLAIN_HTTP_HOSTS`: comma-separated host names (no ports).
    public static func fromEnvironment(_ reader: EnvironmentReader, deployment: DeploymentEnvironment) -> CardDataTransportPolicy {
        let hosts = (reader.raw(plainHTTPHostsVariable) ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return CardDataTransportPolicy(deployment: deployment, sandboxPlainHTTPHosts: Set(hosts))
    }

    /// `nil` when `url` may carry card data, else why not (for the refusal's message; the URL itself holds no secret).
    public func refusal(_ url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              let host = components.host?.lowercased(), !host.isEmpty else {
            return "\(url) is not an absolute http(s) URL"
        }
        switch scheme {
        case "https":
            return nil
        case "http" where deployment == .sandbox:
            if Self.isLoopback(host) || sandboxPlainHTTPHosts.contains(host) { return nil }
            return "plain http:// to \(host) (card data): sandbox allows it only to loopback and to \(Self.plainHTTPHostsVariable)"
        case "http":
            return "plain http:// to \(host) carries card data without TLS; outside PAYPIPE_ENV=sandbox card data goes only over https://"
        default:
            return "\(scheme):// is not https://"
        }
    }

    /// `localhost`, 127.0.0.0/8 and `::1` as written in a URL (no resolution: a name that resolves to loopback is
    /// not loopback for this rule).
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "[::1]" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ $0.count <= 3 && UInt8($0) != nil }) else { return false }
        return octets[0] == "127"
    }
}
