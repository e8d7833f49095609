import JWT

/// The Trust Payments face's checks of stored-credential fields, as docs/recurring.md states them: `credentialsonfile`
/// is `0`, `1` or `2` [doc: credentials-on-file-ppg]; a merchant-initiated AUTH names a successful parent AUTH by
/// `parenttransactionreference` and inherits its payment details (no `pan` or `wallettoken`) [doc: help article
/// 4402772396817]; `initiationreason` is one of the captured letters `A`, `C`, `D` and needs a parent [doc: help
/// article 12799013413137]; `RECUR` goes with a parent here (AUTH alone; the subscription engine's AUTH+SUBSCRIPTION
/// is not simulated). The errors a real gateway gives for these cases are not documented: the face answers 30000 with
/// the field in `errordata`, as for every other invalid field [UNCONFIRMED].
enum TrustPaymentsStoredCredentialRules {
    static let initiationReasons: Set<String> = ["A", "C", "D"]

    /// Whether an AUTH is a child of a stored credential's parent (it then carries no card data of its own).
    static func isChildAuth(_ fields: JSONValue) -> Bool { fields["parenttransactionreference"]?.stringValue != nil }

    /// The first invalid stored-credential field of an AUTH, or nil. `parent` finds a recorded AUTH by its
    /// transaction reference.
    static func invalidField(_ fields: JSONValue, parent: (String) -> JSONValue?) -> String? {
        if let value = fields["credentialsonfile"], !["0", "1", "2"].contains(value.stringValue ?? "") { return "credentialsonfile" }
        let parentReference = fields["parenttransactionreference"]?.stringValue
        if let value = fields["initiationreason"] {
            guard let letter = value.stringValue, initiationReasons.contains(letter), parentReference != nil else { return "initiationreason" }
        }
        if fields["credentialsonfile"]?.stringValue == "2", parentReference == nil { return "parenttransactionreference" }
        if fields["accounttypedescription"]?.stringValue == "RECUR", parentReference == nil { return "accounttypedescription" }
        if let parentReference {
            guard let record = parent(parentReference), record["errorcode"]?.stringValue == "0" else { return "parenttransactionreference" }
        }
        return nil
    }
}
