import JWT

/// Field checks modelled on the real gateway's: the first bad field is reported as errorcode 30000 with the field's
/// name in `errordata` (the gateway, too, reports one field at a time).
public enum SimulatorRequestValidator {
    public static let knownRequestTypes: Set<String> = [
        "AUTH", "THREEDQUERY", "ACCOUNTCHECK", "TRANSACTIONQUERY", "RISKDEC", "TRANSACTIONUPDATE", "REFUND",
    ]

    /// The name of the first invalid field of an AUTH (or THREEDQUERY+AUTH), or nil when it is acceptable.
    public static func invalidAuthField(_ fields: JSONValue) -> String? {
        guard let site = fields["sitereference"]?.stringValue, !site.isEmpty else { return "sitereference" }
        // A stored credential's child AUTH may be RECUR and carries no card data (TrustPaymentsStoredCredentialRules).
        let child = TrustPaymentsStoredCredentialRules.isChildAuth(fields)
        guard fields["accounttypedescription"]?.stringValue == "ECOM" || (child && fields["accounttypedescription"]?.stringValue == "RECUR") else {
            return "accounttypedescription"
        }
        guard let currency = fields["currencyiso3a"]?.stringValue, currency.utf8.count == 3,
              currency.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return "currencyiso3a" }
        guard baseAmount(fields) != nil else { return "baseamount" }
        if let pan = fields["pan"]?.stringValue {
            guard (12...19).contains(pan.utf8.count), pan.utf8.allSatisfy(isDigit) else { return "pan" }
            if let month = fields["expirymonth"]?.stringValue {
                // The Python SDK's tests send `expirymonth` + `expiryyear` ("11", "2031") instead of `expirydate`.
                guard let value = Int(month), month.utf8.count <= 2, month.utf8.allSatisfy(isDigit), (1...12).contains(value) else { return "expirymonth" }
                guard let year = fields["expiryyear"]?.stringValue, year.utf8.count == 4, year.utf8.allSatisfy(isDigit) else { return "expiryyear" }
            } else {
                guard let expiry = fields["expirydate"]?.stringValue, isExpiryDate(expiry) else { return "expirydate" }
            }
        } else if fields["wallettoken"]?.stringValue == nil, !child {
            return "pan"
        }
        return nil
    }

    /// `baseamount` as a positive integer (the gateway accepts a digit string; the claims builder may send a number).
    public static func baseAmount(_ fields: JSONValue) -> Int64? {
        let value = fields["baseamount"]?.int64Value ?? fields["baseamount"]?.stringValue.flatMap { text in
            text.utf8.allSatisfy(isDigit) ? Int64(text) : nil
        }
        guard let value, value > 0 else { return nil }
        return value
    }

    /// `MM/YYYY`.
    static func isExpiryDate(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 7, bytes[2] == UInt8(ascii: "/"), bytes.enumerated().allSatisfy({ $0.offset == 2 || isDigit($0.element) }) else {
            return false
        }
        let month = Int(bytes[0] - 48) * 10 + Int(bytes[1] - 48)
        return (1...12).contains(month)
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// `411111######1111` style.
    public static func maskedPan(_ pan: String?) -> String? {
        guard let pan, pan.count >= 10 else { return nil }
        return String(pan.prefix(6)) + String(repeating: "#", count: pan.count - 10) + String(pan.suffix(4))
    }
}
