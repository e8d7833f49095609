import Pipeline

/// OPP's `result.code` (`ddd.ddd.ddd`) mapped onto ``GatewayOutcome`` with the full pattern table of ACI's "Result
/// Codes" page (other-gateways.md §2 [doc]: developers.primeiropay.com/result-codes, docs.latam.ppro.com, the same
/// regex list; group names marked † there are [UNCONFIRMED]), evaluated in this order: success, review,
/// pending, communication and system errors, declines (bank, risk, 3-D Secure), validation, anything else.
///
/// A short prefix would be wrong: `000.400.030` is a communication error, `800.400.5` is pending, `800.5`/`800.6` are
/// system errors. Pure: `OPPResultCodeTests` runs the table.
public enum OPPResultCode {
    public enum Group: String, Sendable, CaseIterable {
        case success, review, pending, communication, system, bankDecline, risk, threeDSecure, validation, other
    }

    /// The groups in evaluation order, each with the page's patterns (prefix-matched, as the page says). The account
    /// validation pattern `100.2[01]` keeps the page's unescaped dot.
    public static let table: [(group: Group, patterns: [String])] = [
        (.success, [#"^(000\.000\.|000\.100\.1|000\.[36])"#]),
        (.review, [#"^(000\.400\.0[^3]|000\.400\.100)"#]),
        (.pending, [#"^(000\.200)"#, #"^(800\.400\.5|100\.400\.500)"#]),
        (.communication, [#"^(900\.[1234]00|000\.400\.030)"#]),
        (.system, [#"^(800\.[56]|999\.|600\.1|800\.800\.8)"#]),
        (.bankDecline, [#"^(800\.[17]00|800\.800\.[123])"#]),
        // 3DS and Intercard risk checks, external risk systems, AVS, blacklist, risk validation, risk management.
        (.risk, [#"^(000\.400\.[1][0-9][1-9]|000\.400\.2)"#, #"^(100\.400|100\.38|100\.370\.100|100\.370\.11)"#, #"^(800\.400\.1)"#,
                 #"^(100\.100\.701|800\.[32])"#, #"^(800\.1[123456]0)"#, #"^(100\.380\.[23]|100\.380\.101)"#]),
        (.threeDSecure, [#"^(800\.400\.2|100\.380\.4|100\.390)"#]),
        // Configuration, registration, reference, format, address, contact, account and amount validation.
        (.validation, [#"^(600\.[23]|500\.[12]|800\.121)"#, #"^(100\.[13]50)"#, #"^(700\.[1345][05]0)"#,
                       #"^(200\.[123]|100\.[53][07]|800\.900|100\.[69]00\.500)"#, #"^(100\.800)"#, #"^(100\.[97]00)"#,
                       #"^(100\.100|100.2[01])"#, #"^(100\.55)"#]),
    ]

    /// `000.100.110`, `.111`, `.112`: success in integrator, validator or connector **test** mode [doc].
    public static let testModePattern = #"^000\.100\.1"#

    /// The group of `code`; `other` for anything not `ddd.ddd.ddd` or not in the table.
    public static func group(_ code: String) -> Group {
        guard code.wholeMatch(of: /[0-9]{3}\.[0-9]{3}\.[0-9]{3}/) != nil else { return .other }
        for (group, patterns) in table where patterns.contains(where: { matches(code, $0) }) {
            return group
        }
        return .other
    }

    /// The outcome of `code`, and the reason when it differs from what the group says: outside sandbox a test-mode
    /// success means the merchant's entity is a test channel, a configuration error an operator must see
    /// (`gateway_test_mode`, needs review, never "authorised").
    public static func outcome(_ code: String, sandbox: Bool) -> (outcome: GatewayOutcome, reason: String?) {
        switch group(code) {
        case .success:
            if !sandbox, matches(code, testModePattern) { return (.needsReview, "gateway_test_mode") }
            return (.authorized, nil)
        case .review: return (.needsReview, nil)
        case .pending, .communication, .system, .other: return (.uncertain, nil)
        case .bankDecline, .risk, .threeDSecure: return (.declined, nil)
        case .validation: return (.permanentError, nil)
        }
    }

    static func matches(_ code: String, _ pattern: String) -> Bool {
        guard let regex = try? Regex(pattern) else { return false }
        return code.prefixMatch(of: regex) != nil
    }
}
