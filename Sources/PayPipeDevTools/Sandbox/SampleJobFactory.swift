import ApplePay
import ApplePaySandbox
import Foundation
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

    public init(environment: SandboxEnvironment, merchantId: String = SandboxEnvironment.merchantId) {
        self.environment = environment
        self.merchantId = merchantId
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
        let currencies: [(String, String)] = [("GBP", "826"), ("EUR", "978"), ("USD", "840"), ("JPY", "392")]
        // A replay re-sends an earlier valid job's token with the same amount, so only the replay check fails.
        var lastValid: (token: Any, amount: Int64, currency: (String, String), secrets: CardSecrets)?
        return try (0..<count).map { index in
            let kind = allValid ? .valid : Self.kind(at: index, of: count)
            let jobId = "\(prefix)-\(index)"
            var (currency, numeric) = currencies[index % currencies.count]
            var amount = Int64(100 + (index * 37) % 9_900)
            // The simulator picks its answer from the last two digits: 51 declines, 91-99 are fault cases.
            amount = amount / 100 * 100 + (kind == .declined ? 51 : amount % 50)
            if kind == .malformed {
                return Sample(kind: kind, jobId: jobId, body: Array("{\"jobId\": \"\(jobId)\", \"merchantId\": ".utf8))
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
            var job: [String: Any] = [
                "jobId": jobId,
                "merchantId": kind == .unknownMerchant ? "no-such-merchant" : merchantId,
                "orderReference": "order-\(orderPrefix.map { "\($0)-\(index)" } ?? jobId)",
                "amount": ["value": amount, "currency": currency],
                "applePayToken": token,
                "billingContact": ["givenName": "Ada", "familyName": "Lovelace", "postalCode": "EC1A 1BB", "countryCode": "GB"],
                "metadata": ["sample": kind.rawValue],
            ]
            if kind == .invalidJob { job["orderReference"] = nil }
            return Sample(kind: kind, jobId: jobId, body: Array(try JSONSerialization.data(withJSONObject: job, options: [.sortedKeys])),
                          cardSecrets: secrets)
        }
    }
}
