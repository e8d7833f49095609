/// Whether the Apple Pay trust root may be replaced: only in sandbox. Anyone holding the replacement root's key can
/// mint tokens that pass every check, so outside sandbox the pinned Apple Root CA - G3 is the only root, and a set
/// `PAYPIPE_APPLEPAY_TRUST_ROOT` is a configuration error (exit 78) rather than a warning. No other setting lifts it.
public enum TrustRootPolicy {
    public static let variable = "PAYPIPE_APPLEPAY_TRUST_ROOT"

    /// The replacement root's PEM path, `nil` for Apple's pinned root; throws outside sandbox when the variable is set.
    public static func replacementPath(_ reader: EnvironmentReader, deployment: DeploymentEnvironment) throws(ConfigurationError) -> String? {
        guard let path = reader.raw(variable) else { return nil }
        guard deployment == .sandbox else {
            throw ConfigurationError(
                variable: variable,
                problem: "a replacement Apple Pay trust root is accepted only with PAYPIPE_ENV=sandbox; outside sandbox only the pinned Apple Root CA - G3 is trusted: unset it")
        }
        return path
    }
}
