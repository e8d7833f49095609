import Foundation
import Pipeline

/// Settings of ``GatewaySimulator``. Secrets are never printed.
public struct GatewaySimulatorConfiguration: Sendable, CustomStringConvertible {
    public var host: String
    /// 0 picks an ephemeral port (tests).
    public var port: UInt16
    /// JWT username → JWT secret: verifies request JWTs and signs answers (`/jwt/`).
    public var merchants: [String: String]
    /// Webservices username → password for HTTP Basic on `/json/`.
    public var webservicesUsers: [String: String]
    /// How long the `…98` behaviour waits before answering (longer than the client's timeout).
    public var slowResponseSeconds: Double
    /// Probability in 0...1 that any request is refused with HTTP 503 before it is processed.
    public var faultRate: Double
    /// Probability in 0...1 that an AUTH the gateway records is answered only after `slowResponseSeconds`.
    public var timeoutRate: Double
    /// Probability in 0...1 that an AUTH the gateway records gets its connection dropped instead of an answer.
    public var resetRate: Double
    /// Maximum accepted age of a request JWT's `iat` (Trust Payments: about 15 minutes).
    public var maxJWTAge: Int64
    /// Tolerance in seconds for a request JWT's `exp` (and an `iat` in the future). 0: the simulator shares the
    /// client's clock, and a request processed after its `exp` must never be recorded.
    public var jwtClockSkew: Int64
    public var threads: Int
    /// Status queries are answered after a random delay of up to this many seconds (0: at once), the answer being
    /// what the ledger held when the query arrived: concurrent queries for one payment overlap (adversarial chaos).
    public var queryDelaySeconds: Double
    /// Probability in 0...1 that an AUTH is dropped before processing (nothing recorded, connection reset).
    public var loseRate: Double
    /// Seed of the fault draws (nil: unseeded).
    public var seed: UInt64?
    /// Seconds after which a recorded AUTH pending settlement reads as settled (settlestatus 100), so it can be
    /// refunded; nil: never (`PAYPIPE_SIM_SETTLE_DELAY`).
    public var settleDelaySeconds: Double?
    /// Site references `/json/` accepts (30006 for another); nil: any (`PAYPIPE_SIM_SITES`).
    public var siteReferences: Set<String>?
    /// Seconds every request waits before it is answered, as a real gateway's round trip does
    /// (`PAYPIPE_SIM_LATENCY`, 0): `scripts/bench --only scaling` measures workers per stage against a slow gateway.
    public var latencySeconds: Double = 0
    /// The OPP face's bearer tokens and the entity each acts for (`PAYPIPE_SIM_OPP_TOKENS`, `token=entityId,…`).
    public var oppTokens: [String: String] = [:]
    /// The OPP face's legacy `authentication.userId`/`password` pairs (`PAYPIPE_SIM_OPP_USERS`, `user=password,…`).
    public var oppUsers: [String: String] = [:]
    /// The TapPay face's partner keys and the merchant id each holds (`PAYPIPE_SIM_TAPPAY_PARTNERS`, `key=merchant,…`).
    public var tapPayPartners: [String: String] = [:]
    /// The Apple merchant-token API face (``AppleTokenAPIFace``), nil: off (`PAYPIPE_SIM_APPLE_TOKEN_API_PORT` unset).
    public var appleTokenAPI: AppleTokenAPIFace?

    public init(
        host: String = "127.0.0.1", port: UInt16 = 9180, merchants: [String: String], webservicesUsers: [String: String] = [:],
        slowResponseSeconds: Double = 5, faultRate: Double = 0, timeoutRate: Double = 0, resetRate: Double = 0,
        maxJWTAge: Int64 = 900, jwtClockSkew: Int64 = 0, threads: Int = 8, queryDelaySeconds: Double = 0, loseRate: Double = 0,
        seed: UInt64? = nil, settleDelaySeconds: Double? = nil, siteReferences: Set<String>? = nil
    ) {
        self.settleDelaySeconds = settleDelaySeconds
        self.siteReferences = siteReferences
        self.queryDelaySeconds = queryDelaySeconds
        self.loseRate = loseRate
        self.seed = seed
        self.host = host
        self.port = port
        self.merchants = merchants
        self.webservicesUsers = webservicesUsers
        self.slowResponseSeconds = slowResponseSeconds
        self.faultRate = faultRate
        self.timeoutRate = timeoutRate
        self.resetRate = resetRate
        self.maxJWTAge = maxJWTAge
        self.jwtClockSkew = jwtClockSkew
        self.threads = threads
    }

    /// From `PAYPIPE_SIM_MERCHANTS` (`user=secret,…`), `PAYPIPE_SIM_WEBSERVICES_USERS` (`user=password,…`),
    /// `PAYPIPE_SIM_HOST` (127.0.0.1), `PAYPIPE_SIM_PORT` (9180), `PAYPIPE_SIM_SLOW` (5s), `PAYPIPE_SIM_FAULT_RATE` (0),
    /// `PAYPIPE_SIM_TIMEOUT_RATE` (0), `PAYPIPE_SIM_RESET_RATE` (0), `PAYPIPE_SIM_QUERY_DELAY` (0s: the longest random
    /// delay of a status query's answer), `PAYPIPE_SIM_THREADS` (8), `PAYPIPE_SIM_LOSE_RATE` (0: AUTHs dropped before
    /// processing), `PAYPIPE_SIM_SEED` (unset: unseeded fault draws), `PAYPIPE_SIM_SETTLE_DELAY` (unset: AUTHs never
    /// settle by themselves), `PAYPIPE_SIM_SITES` (unset: any site reference; else a comma-separated list),
    /// `PAYPIPE_SIM_LATENCY` (0s: the wait before every answer; give it `PAYPIPE_SIM_THREADS` to match the load),
    /// `PAYPIPE_SIM_OPP_TOKENS`, `PAYPIPE_SIM_OPP_USERS` and `PAYPIPE_SIM_TAPPAY_PARTNERS` (the OPP and TapPay faces),
    /// `PAYPIPE_SIM_APPLE_TOKEN_API_PORT` with `_CERT`, `_KEY` and `_CLIENT_CA` (the Apple merchant-token API face).
    /// At least one of them, `PAYPIPE_SIM_MERCHANTS` or `PAYPIPE_SIM_WEBSERVICES_USERS` must name a user.
    public static func fromEnvironment(_ environment: EnvironmentReader = EnvironmentReader()) throws -> GatewaySimulatorConfiguration {
        let merchants = try pairs(environment.raw("PAYPIPE_SIM_MERCHANTS") ?? "", variable: "PAYPIPE_SIM_MERCHANTS")
        let webservicesUsers = try pairs(environment.raw("PAYPIPE_SIM_WEBSERVICES_USERS") ?? "", variable: "PAYPIPE_SIM_WEBSERVICES_USERS")
        let oppTokens = try pairs(environment.raw("PAYPIPE_SIM_OPP_TOKENS") ?? "", variable: "PAYPIPE_SIM_OPP_TOKENS")
        let oppUsers = try pairs(environment.raw("PAYPIPE_SIM_OPP_USERS") ?? "", variable: "PAYPIPE_SIM_OPP_USERS")
        let tapPayPartners = try pairs(environment.raw("PAYPIPE_SIM_TAPPAY_PARTNERS") ?? "", variable: "PAYPIPE_SIM_TAPPAY_PARTNERS")
        guard !merchants.isEmpty || !webservicesUsers.isEmpty || !oppTokens.isEmpty || !oppUsers.isEmpty || !tapPayPartners.isEmpty else {
            throw ConfigurationError(variable: "PAYPIPE_SIM_MERCHANTS", problem: "expected jwtUsername=secret[,…] (or PAYPIPE_SIM_WEBSERVICES_USERS user=password[,…])")
        }
        let faultRate = try environment.read(DevToolSettings.simFaultRate)
        let timeoutRate = try environment.read(DevToolSettings.simTimeoutRate)
        let resetRate = try environment.read(DevToolSettings.simResetRate)
        guard timeoutRate + resetRate <= 1 else {
            throw ConfigurationError(variable: "PAYPIPE_SIM_RESET_RATE", problem: "PAYPIPE_SIM_TIMEOUT_RATE + PAYPIPE_SIM_RESET_RATE must not exceed 1")
        }
        var configuration = GatewaySimulatorConfiguration(
            host: try environment.read(DevToolSettings.simHost),
            port: try environment.read(DevToolSettings.simPort),
            merchants: merchants,
            webservicesUsers: webservicesUsers,
            slowResponseSeconds: try environment.read(DevToolSettings.simSlow),
            faultRate: faultRate, timeoutRate: timeoutRate, resetRate: resetRate,
            threads: try environment.read(DevToolSettings.simThreads),
            queryDelaySeconds: try environment.read(DevToolSettings.simQueryDelay),
            loseRate: try environment.read(DevToolSettings.simLoseRate),
            seed: try environment.raw("PAYPIPE_SIM_SEED").map { text in
                guard let seed = UInt64(text) else { throw ConfigurationError(variable: "PAYPIPE_SIM_SEED", problem: "expected an unsigned integer, got '\(text)'") }
                return seed
            },
            settleDelaySeconds: try environment.raw(DevToolSettings.simSettleDelay).map { _ in try environment.read(DevToolSettings.simSettleDelay) },
            siteReferences: environment.raw("PAYPIPE_SIM_SITES").map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) })
        configuration.latencySeconds = try environment.read(DevToolSettings.simLatency)
        configuration.oppTokens = oppTokens
        configuration.oppUsers = oppUsers
        configuration.tapPayPartners = tapPayPartners
        configuration.appleTokenAPI = try AppleTokenAPIFace.fromEnvironment(environment)
        return configuration
    }

    /// Parses `name=value,name=value` (values may contain `=`).
    public static func pairs(_ text: String, variable: String) throws(ConfigurationError) -> [String: String] {
        var result: [String: String] = [:]
        for entry in text.split(separator: ",") where !entry.trimmingCharacters(in: .whitespaces).isEmpty {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ConfigurationError(variable: variable, problem: "expected name=value pairs separated by commas")
            }
            result[String(parts[0]).trimmingCharacters(in: .whitespaces)] = String(parts[1])
        }
        return result
    }

    public var description: String {
        "GatewaySimulatorConfiguration(\(host):\(port), merchants: \(merchants.keys.sorted()), webservicesUsers: \(webservicesUsers.keys.sorted()), faultRate: \(faultRate), timeoutRate: \(timeoutRate), resetRate: \(resetRate))"
    }
}
