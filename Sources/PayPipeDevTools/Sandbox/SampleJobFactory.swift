import ApplePay
import ApplePaySandbox
import Crypto
import Foundation
import PaymentStages
import Pipeline

/// Sample jobs for demos and tests: tokens minted with the sandbox PKI, in a deliberate mix of outcomes
/// so a run shows the pipeline's success and failure paths side by side.
public struct SampleJobFactory: Sendable {
    /// What a sample job is meant to exercise, and where it should end up.
    public enum Kind: String, Sendable, CaseIterable {
        case valid               // authorised by the gateway simulator
        case declined            // amount ending in 51: the simulator declines (70000)
        case validRSA            // RSA_v1 token, advances
        case amountMismatch      // payment failed: amount_mismatch
        case invalidJob          // payment failed: invalid_job
        case replayedToken       // payment failed: token_replayed
        case unknownMerchant     // dead-lettered: unknown_merchant
        case malformed           // dead-lettered: malformed_job
        case amountNotRepresentable  // TapPay: a TWD amount in cents: failed amount_not_representable
    }

    public struct Sample: Sendable {
        public let kind: Kind
        public let jobId: String
        public let body: [UInt8]
        /// The device account number and online payment cryptogram sealed in the token (nil for a malformed job):
        /// only for card-data hygiene checks, which search logs and dumps for them.
        public let cardSecrets: CardSecrets?

        public init(kind: Kind, jobId: String, body: [UInt8], cardSecrets: CardSecrets? = nil) {
            self.kind = kind
            self.jobId = jobId
            self.body = body
            self.cardSecrets = cardSecrets
        }
    }

    /// What must never appear outside the encrypted token and `card_data`.
    public struct CardSecrets: Sendable, Equatable {
        public let pan: String
        public let cryptogram: String
    }

    public let environment: SandboxEnvironment
    public let merchantId: String
    /// The merchant's connector, which shapes the jobs: Trust Payments and OPP jobs carry Apple Pay tokens (OPP's in
    /// GBP, EUR and USD only: zero-exponent currencies are refused), TapPay jobs a fresh `tapPayPrime` in TWD, USD
    /// and HKD, their RSA_v1 slot a valid job and their amount-mismatch slot an amount TapPay cannot express.
    public let connector: ConnectorKind

    /// `connector` defaults to the sandbox merchant's (``SandboxEnvironment/connector(ofMerchant:)``).
    public init(environment: SandboxEnvironment, merchantId: String = SandboxEnvironment.merchantId, connector: ConnectorKind? = nil) {
        self.environment = environment
        self.merchantId = merchantId
        self.connector = connector ?? SandboxEnvironment.connector(ofMerchant: merchantId)
    }

    /// A TapPay prime as the simulator's face reads it (`sim_<unix ms>_…`): it expires 90 s after `now`.
    public static func samplePrime(now: Date) -> String {
        "sim_\(Int64(now.timeIntervalSince1970 * 1000))_\(Hex.encode(SecureRandom.bytes(count: 12)))"
    }

    /// A TapPay deferred payment's prime as the simulator's face reads it (`sim_deferred_<unix ms>_…`): it expires 30
    /// days after `now`. Its job carries `"amountPending": true`.
    public static func sampleDeferredPrime(now: Date) -> String {
        "sim_deferred_\(Int64(now.timeIntervalSince1970 * 1000))_\(Hex.encode(SecureRandom.bytes(count: 12)))"
    }

    private var currencies: [(String, String)] {
        switch connector {
        case .trustPayments: [("GBP", "826"), ("EUR", "978"), ("USD", "840"), ("JPY", "392")]
        case .opp: [("GBP", "826"), ("EUR", "978"), ("USD", "840")]
        case .tapPay: [("TWD", "901"), ("USD", "840"), ("HKD", "344")]
        }
    }

    /// The kind of the `index`-th job of a mixed run: mostly valid, one decline and one of each failure per ten jobs,
    /// and (from 20 jobs on) one of each unattributable kind at the end.
    public static func kind(at index: Int, of count: Int) -> Kind {
        if count >= 20, index == count - 1 { return .malformed }
        if count >= 20, index == count - 2 { return .unknownMerchant }
        switch index % 10 {
        case 4: return .declined
        case 6: return .validRSA
        case 7: return .amountMismatch
        case 8: return .invalidJob
        case 9: return .replayedToken
        default: return .valid
        }
    }

    /// `count` jobs with ids `<prefix>-<n>`, tokens signed now. `allValid` makes every job `.valid` (EC_v1, an amount the
    /// simulator authorises): the load of a benchmark rather than the demo's mix of outcomes. `orderPrefix` gives job
    /// `n` the order reference `order-<orderPrefix>-<n>` (a retry of that earlier wave's orders under new job ids);
    /// `panOffset` shifts the sample PANs, so that every wave's jobs have their own.
    public func makeJobs(
        count: Int, prefix: String, now: Date = Date(), allValid: Bool = false, orderPrefix: String? = nil, panOffset: Int = 0
    ) throws -> [Sample] {
        let currencies = currencies
        // A replay re-sends an earlier valid job's token with the same amount, so only the replay check fails.
        var lastValid: (token: Any, amount: Int64, currency: (String, String), secrets: CardSecrets)?
        var lastPrime: (prime: String, amount: Int64, currency: String)?
        return try (0..<count).map { index in
            var kind = allValid ? .valid : Self.kind(at: index, of: count)
            let jobId = "\(prefix)-\(index)"
            var (currency, numeric) = currencies[index % currencies.count]
            var amount = Int64(100 + (index * 37) % 9_900)
            // The simulator picks its answer from the last two digits: 51 declines, 91-99 are fault cases.
            amount = amount / 100 * 100 + (kind == .declined ? 51 : amount % 50)
            if kind == .malformed {
                return Sample(kind: kind, jobId: jobId, body: Array("{\"jobId\": \"\(jobId)\", \"merchantId\": ".utf8))
            }
            if connector == .tapPay {
                // TWD goes in whole dollars, and the face reads the behaviour from the amount it is sent.
                switch kind {
                case .validRSA: kind = .valid
                case .amountMismatch: (kind, currency) = (.amountNotRepresentable, "TWD")
                default: break
                }
                if currency == "TWD" { amount = amount * 100 + (kind == .amountNotRepresentable ? 50 : 0) }
                var prime = Self.samplePrime(now: now)
                if kind == .replayedToken, let previous = lastPrime { (prime, amount, currency) = previous }
                if Self.kind(at: index, of: count) == .valid || allValid { lastPrime = (prime, amount, currency) }
                return Sample(kind: kind, jobId: jobId, body: try body(kind: kind, jobId: jobId, index: index, orderPrefix: orderPrefix,
                                                                       amount: amount, currency: currency, payment: ("tapPayPrime", prime)))
            }
            var token: Any
            let secrets: CardSecrets
            if kind == .replayedToken, let previous = lastValid {
                token = previous.token
                amount = previous.amount
                (currency, numeric) = previous.currency
                secrets = previous.secrets
            } else {
                let merchant = kind == .validRSA ? environment.rsaMerchant : environment.ecMerchant
                var request = SandboxMintRequest(
                    version: kind == .validRSA ? .rsaV1 : .ecV1, merchantIdentifier: merchant.merchantIdentifier,
                    amount: kind == .amountMismatch ? amount + 1 : amount, currencyNumeric: numeric,
                    pan: "4" + String(format: "%015d", 111_111_111_111_111 + panOffset + index), signingTime: now)
                request.merchant = merchant
                token = try JSONSerialization.jsonObject(with: Data(try environment.pki.mintToken(request)))
                secrets = CardSecrets(pan: request.pan, cryptogram: request.cryptogram)
                if kind == .valid { lastValid = (token, amount, (currency, numeric), secrets) }
            }
            return Sample(kind: kind, jobId: jobId, body: try body(kind: kind, jobId: jobId, index: index, orderPrefix: orderPrefix,
                                                                   amount: amount, currency: currency, payment: ("applePayToken", token)),
                          cardSecrets: secrets)
        }
    }

    /// One job's JSON, its means of payment (`applePayToken` or `tapPayPrime`) under `payment.key`.
    private func body(kind: Kind, jobId: String, index: Int, orderPrefix: String?, amount: Int64, currency: String,
                      payment: (key: String, value: Any)) throws -> [UInt8] {
        var job: [String: Any] = [
            "jobId": jobId,
            "merchantId": kind == .unknownMerchant ? "no-such-merchant" : merchantId,
            "orderReference": "order-\(orderPrefix.map { "\($0)-\(index)" } ?? jobId)",
            "amount": ["value": amount, "currency": currency],
            payment.key: payment.value,
            "billingContact": ["givenName": "Ada", "familyName": "Lovelace", "postalCode": "EC1A 1BB", "countryCode": "GB"],
            "metadata": ["sample": kind.rawValue],
        ]
        if kind == .invalidJob { job["orderReference"] = nil }
        return Array(try JSONSerialization.data(withJSONObject: job, options: [.sortedKeys]))
    }
}
