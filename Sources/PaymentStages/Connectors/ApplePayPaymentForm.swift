import Foundation
import JSON
import Pipeline

/// The Apple Pay payment's forms every connector sends the same way, whatever the processor. Pure.
public enum ApplePayPaymentForm {
    /// The one `wallettoken` shape sent whatever the job carried (bare `paymentData`, a `PKPaymentToken`, or
    /// `{"token": …}`): the JSON string of `{"token": <PKPaymentToken>}`, the Apple Pay payment as processors' JS
    /// libraries stringify it (its contacts travel as billing/customer fields instead). [UNCONFIRMED]: no stored
    /// source gives every processor's own form (docs/authorize.md).
    public static func walletToken(_ text: String) throws(AuthorizeError) -> String {
        guard let value = try? JSONValue.parse(Array(text.utf8)), value.objectValue != nil else {
            throw .invalidCardData("the Apple Pay token is not a JSON object")
        }
        let token: JSONValue
        if let inner = value["token"], inner.objectValue != nil {
            token = inner
        } else if value["paymentData"]?.objectValue != nil {
            token = value
        } else if value["version"] != nil, value["data"] != nil, value["header"] != nil {
            token = ["paymentData": value]
        } else {
            throw .invalidCardData("the Apple Pay token is neither paymentData, a PKPaymentToken nor {\"token\": …}")
        }
        return (["token": token] as JSONValue).serializedString
    }

    /// `MM/YYYY` from Apple's `applicationExpirationDate` (YYMMDD). Two-digit years are 20YY: card expiry dates are
    /// at most a few years ahead, and Apple Pay did not exist before 2014.
    public static func expiryDate(fromYYMMDD text: String) throws(AuthorizeError) -> String {
        let digits = Array(text.utf8)
        guard digits.count == 6, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw .invalidCardData("applicationExpirationDate is not YYMMDD")
        }
        let value = digits.map { Int($0 - UInt8(ascii: "0")) }
        let month = value[2] * 10 + value[3]
        let day = value[4] * 10 + value[5]
        guard (1...12).contains(month), (0...31).contains(day) else {
            throw .invalidCardData("applicationExpirationDate has no valid month/day")
        }
        return String(decoding: digits[2..<4], as: UTF8.self) + "/20" + String(decoding: digits[0..<2], as: UTF8.self)
    }
}
