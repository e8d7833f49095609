import Foundation
import HTTP
import Postgres

/// Pulls queued merchant-token events from Apple over mutual TLS (docs/merchant-tokens.md): claims the due rows
/// (one statement), fetches each with its merchant's identity and a fresh `x-request-id`, decides what the answer
/// means (``MerchantTokenEventPull``), and settles the batch (one statement). No database lock is held during the calls.
///
/// `baseURL` is Apple's `https://apple-pay-gateway.apple.com` in production; the sandbox points it at the simulator.
public struct MerchantTokenEventPuller: Sendable {
    public static let appleBaseURL = "https://apple-pay-gateway.apple.com"

    public var baseURL: String
    /// The identity of a PayPipe merchant (nil: none configured; the event waits for one within Apple's 7 days).
    public var identity: @Sendable (String) -> AppleTokenAPIIdentity?
    /// The merchants with an identity, asked in turn for an event of Apple's bare path
    /// (``MerchantTokenEventPull/resolveBare(_:receivedAt:attempts:now:)``).
    public var merchants: @Sendable () -> [String]
    /// CA certificates to trust for the API (the sandbox simulator's); nil: the system store.
    public var caCertificatePath: String?
    public var clock: @Sendable () -> Date
    public var requestId: @Sendable () -> String
    public var timeout: Double
    /// How long a claimed event is left to this puller before another may take it.
    public var lease: Double
    private let store = MerchantTokenEventStore()

    public init(baseURL: String = MerchantTokenEventPuller.appleBaseURL, identity: @escaping @Sendable (String) -> AppleTokenAPIIdentity?,
                merchants: @escaping @Sendable () -> [String] = { [] }, caCertificatePath: String? = nil, clock: @escaping @Sendable () -> Date = { Date() },
                requestId: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() }, timeout: Double = 15, lease: Double = 120) {
        self.baseURL = baseURL
        self.identity = identity
        self.merchants = merchants
        self.caCertificatePath = caCertificatePath
        self.clock = clock
        self.requestId = requestId
        self.timeout = timeout
        self.lease = lease
    }

    /// One round: up to `limit` due events pulled and settled. Returns each event's outcome.
    @discardableResult
    public func pullDue(limit: Int = 50, on connection: PostgresConnection) throws -> [String: MerchantTokenEventPull.Outcome] {
        let claims = try store.claimDue(limit: limit, lease: lease, now: clock(), on: connection)
        guard !claims.isEmpty else { return [:] }
        var clients: [AppleTokenAPIIdentity: HTTPClient] = [:]
        func fetch(_ eventId: String, as identity: AppleTokenAPIIdentity) -> MerchantTokenEventPull.Answer {
            let client = clients[identity] ?? HTTPClient(configuration: HTTPClientConfiguration(
                connectTimeout: min(5, timeout), totalTimeout: timeout, caCertificatePath: caCertificatePath,
                clientCertificatePath: identity.certificatePath, clientKeyPath: identity.keyPath))
            clients[identity] = client
            let request = MerchantTokenEventPull.request(
                baseURL: baseURL, appleMerchantId: identity.appleMerchantId, eventId: eventId, requestId: requestId())
            do {
                let response = try client.send(request)
                return .response(status: response.status, body: response.body)
            } catch {
                return .transportFailed(error.description)
            }
        }
        var outcomes: [(eventId: String, outcome: MerchantTokenEventPull.Outcome)] = []
        var resolved: [String: String] = [:]
        for claim in claims {
            guard let merchantId = claim.merchantId else {
                // Apple's bare path: each merchant's identity asks; only the one Apple serves the event to gets it.
                let answers = merchants().compactMap { merchant in identity(merchant).map { (merchantId: merchant, answer: fetch(claim.eventId, as: $0)) } }
                switch MerchantTokenEventPull.resolveBare(answers, receivedAt: claim.receivedAt, attempts: claim.attempts, now: clock()) {
                case .merchant(let merchant, let outcome):
                    resolved[claim.eventId] = merchant
                    outcomes.append((claim.eventId, outcome))
                case .unresolved(let outcome):
                    outcomes.append((claim.eventId, outcome))
                }
                continue
            }
            let answer = identity(merchantId).map { fetch(claim.eventId, as: $0) }
                ?? .noIdentity("no Apple merchant-token API identity for merchant \(merchantId)")
            outcomes.append((claim.eventId, MerchantTokenEventPull.decide(answer, receivedAt: claim.receivedAt, attempts: claim.attempts, now: clock())))
        }
        try store.settle(outcomes, merchants: resolved, now: clock(), on: connection)
        return Dictionary(outcomes.map { ($0.eventId, $0.outcome) }, uniquingKeysWith: { first, _ in first })
    }
}

