import ApplePay
import Foundation
import Pipeline

/// Settings of the decrypt worker beyond the shared ``WorkerConfiguration``.
public struct DecryptConfiguration: Sendable {
    public var verifier: ApplePayVerifierConfiguration
    /// Whether a trust root other than Apple Root CA - G3 is in use (logged loudly at start-up).
    public var trustRootOverridden: Bool
    public var merchantCacheSeconds: Double
    /// The oldest AMQP publish timestamp accepted as the signing-time clock (``VerificationClock``).
    public var maxQueueAge: Double

    /// Reads `PAYPIPE_APPLEPAY_TRUST_ROOT` (PEM file; default the pinned Apple Root CA - G3; sandbox only, see
    /// ``TrustRootPolicy``), `PAYPIPE_APPLEPAY_MAX_AGE` (5m), `PAYPIPE_APPLEPAY_MAX_FUTURE_SKEW` (1m),
    /// `PAYPIPE_MERCHANT_CACHE_TTL` (5s), `PAYPIPE_MAX_QUEUE_AGE` (24h).
    public init(environment: EnvironmentReader, deployment: DeploymentEnvironment) throws(ConfigurationError) {
        var trustRoot = TrustRoot.appleRootCAG3
        trustRootOverridden = false
        if let path = try TrustRootPolicy.replacementPath(environment, deployment: deployment) {
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(variable: "PAYPIPE_APPLEPAY_TRUST_ROOT", problem: "cannot read \(path)")
            }
            do {
                trustRoot = try TrustRoot(pem: pem)
            } catch {
                throw ConfigurationError(variable: "PAYPIPE_APPLEPAY_TRUST_ROOT", problem: "not a usable root certificate: \(error)")
            }
            trustRootOverridden = true
        }
        verifier = ApplePayVerifierConfiguration(
            trustRoot: trustRoot,
            signingTimeMaxAge: try environment.read(PaymentSettings.signingTimeMaxAge),
            signingTimeMaxFutureSkew: try environment.read(PaymentSettings.signingTimeMaxFutureSkew))
        merchantCacheSeconds = try environment.read(PaymentSettings.merchantCacheTTL)
        maxQueueAge = try environment.read(PaymentSettings.maxQueueAge)
    }
}
