/// The OPP face's checks of the stored-credential parameters, as docs/recurring.md states them [doc, reseller:
/// developer.peachpayments.com oppwa-guides-card-on-file; Peach support articles 47001238374, 47001209008]:
/// `standingInstruction.mode` `INITIAL` (with `source` `CIT`) or `REPEATED` (with `source` `MIT` and the
/// `initialTransactionId` of the first payment), `type` `UNSCHEDULED`/`RECURRING`/`INSTALLMENT`, `recurringType`
/// `SUBSCRIPTION`/`STANDING_ORDER` only on top of `RECURRING`, `createRegistration` `true`/`false` and only on a
/// first payment. A broken rule is `200.300.404` naming the parameter, as for any other. How OPP reacts to a
/// `REPEATED` payment without `initialTransactionId` is undocumented [UNCONFIRMED]: refused here.
enum OPPStoredCredentialRules {
    static let prefix = "standingInstruction."

    static func invalidParameter(_ fields: [String: String]) -> String? {
        if let value = fields["createRegistration"] {
            guard ["true", "false"].contains(value), fields[prefix + "mode"].map({ $0 == "INITIAL" }) ?? true else { return "createRegistration" }
        }
        guard fields.keys.contains(where: { $0.hasPrefix(prefix) }) else { return nil }
        guard let mode = fields[prefix + "mode"], ["INITIAL", "REPEATED"].contains(mode) else { return prefix + "mode" }
        guard let type = fields[prefix + "type"], ["UNSCHEDULED", "RECURRING", "INSTALLMENT"].contains(type) else { return prefix + "type" }
        guard fields[prefix + "source"] == (mode == "INITIAL" ? "CIT" : "MIT") else { return prefix + "source" }
        if let recurring = fields[prefix + "recurringType"] {
            guard ["SUBSCRIPTION", "STANDING_ORDER"].contains(recurring), type == "RECURRING" else { return prefix + "recurringType" }
        }
        if mode == "REPEATED" {
            guard let initial = fields[prefix + "initialTransactionId"], !initial.isEmpty else { return prefix + "initialTransactionId" }
        }
        return nil
    }
}
