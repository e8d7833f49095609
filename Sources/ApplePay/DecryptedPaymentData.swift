import Foundation
import JSON

/// The decrypted `paymentData` (applepay-token.md §5), under Apple's field names. Unknown keys are ignored.
///
/// `description`, `debugDescription` and the reflection mirror (used by `dump` and string interpolation) only ever
/// show the masked form, so logging a value by accident cannot leak a PAN or cryptogram.
public struct DecryptedPaymentData: Sendable, Codable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// Device PAN (DPAN), or MPAN for merchant tokens.
    public var applicationPrimaryAccountNumber: String
    /// YYMMDD.
    public var applicationExpirationDate: String
    /// ISO 4217 numeric, kept as a string (leading zeros matter).
    public var currencyCode: String
    /// Minor units.
    public var transactionAmount: Int64
    public var cardholderName: String?
    /// Hex.
    public var deviceManufacturerIdentifier: String
    /// "3DSecure" or "EMV".
    public var paymentDataType: String
    public var paymentData: PaymentData
    public var authenticationResponses: [AuthenticationResponse]?
    public var merchantTokenIdentifier: String?
    public var merchantTokenMetadata: MerchantTokenMetadata?

    public init(
        applicationPrimaryAccountNumber: String, applicationExpirationDate: String, currencyCode: String,
        transactionAmount: Int64, cardholderName: String? = nil, deviceManufacturerIdentifier: String,
        paymentDataType: String, paymentData: PaymentData, authenticationResponses: [AuthenticationResponse]? = nil,
        merchantTokenIdentifier: String? = nil, merchantTokenMetadata: MerchantTokenMetadata? = nil
    ) {
        self.applicationPrimaryAccountNumber = applicationPrimaryAccountNumber
        self.applicationExpirationDate = applicationExpirationDate
        self.currencyCode = currencyCode
        self.transactionAmount = transactionAmount
        self.cardholderName = cardholderName
        self.deviceManufacturerIdentifier = deviceManufacturerIdentifier
        self.paymentDataType = paymentDataType
        self.paymentData = paymentData
        self.authenticationResponses = authenticationResponses
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.merchantTokenMetadata = merchantTokenMetadata
    }

    /// Decodes and sanity-checks a decrypted plaintext.
    ///
    /// Reads the fields from a parsed `JSONValue` tree rather than through `JSONDecoder`, which alone cost ~7% of a
    /// token's processing; `Codable` stays available for storing and printing the value.
    public static func decode(_ plaintext: [UInt8]) throws(ApplePayError) -> DecryptedPaymentData {
        let root: JSONValue
        do {
            root = try JSONValue.parse(plaintext)
        } catch {
            throw .payloadInvalid("decrypted payload is not valid JSON")
        }
        return try decode(root)
    }

    /// Decodes and sanity-checks an already parsed payload (or the stored copy written from ``jsonValue``).
    public static func decode(_ root: JSONValue) throws(ApplePayError) -> DecryptedPaymentData {
        guard root.isObject else { throw ApplePayError.payloadInvalid("decrypted payload is not a JSON object") }
        let fields = PayloadFields(root, path: "")
        let paymentData = try fields.object("paymentData")
        let value = DecryptedPaymentData(
            applicationPrimaryAccountNumber: try fields.string("applicationPrimaryAccountNumber"),
            applicationExpirationDate: try fields.string("applicationExpirationDate"),
            currencyCode: try fields.string("currencyCode"),
            transactionAmount: try fields.integer("transactionAmount"),
            cardholderName: try fields.optionalString("cardholderName"),
            deviceManufacturerIdentifier: try fields.string("deviceManufacturerIdentifier"),
            paymentDataType: try fields.string("paymentDataType"),
            paymentData: PaymentData(
                onlinePaymentCryptogram: try paymentData.optionalString("onlinePaymentCryptogram"),
                eciIndicator: try paymentData.optionalString("eciIndicator"),
                emvData: try paymentData.optionalString("emvData"),
                encryptedPINData: try paymentData.optionalString("encryptedPINData")),
            authenticationResponses: try fields.optionalArray("authenticationResponses")?.map { (entry) throws(ApplePayError) in
                AuthenticationResponse(
                    merchantIdentifier: try entry.optionalString("merchantIdentifier"),
                    authenticationData: try entry.optionalString("authenticationData"),
                    transactionAmount: try entry.optionalInteger("transactionAmount"))
            },
            merchantTokenIdentifier: try fields.optionalString("merchantTokenIdentifier"),
            merchantTokenMetadata: try fields.optionalObject("merchantTokenMetadata").map { (metadata) throws(ApplePayError) in
                MerchantTokenMetadata(
                    cardArt: try metadata.optionalArray("cardArt")?.map { (art) throws(ApplePayError) in
                        CardArt(url: try art.optionalString("url"), width: try art.optionalInteger("width").map { Int($0) },
                                height: try art.optionalInteger("height").map { Int($0) })
                    },
                    cardMetadata: try metadata.optionalObject("cardMetadata").map { (card) throws(ApplePayError) in
                        CardMetadata(expirationDate: try card.optionalString("expirationDate"), fpanSuffix: try card.optionalString("fpanSuffix"))
                    })
            })
        try value.validate()
        return value
    }

    private func validate() throws(ApplePayError) {
        guard applicationPrimaryAccountNumber.isASCIIDigits else {
            throw .payloadInvalid("applicationPrimaryAccountNumber is not numeric")
        }
        guard applicationExpirationDate.utf8.count == 6, applicationExpirationDate.isASCIIDigits else {
            throw .payloadInvalid("applicationExpirationDate is not YYMMDD")
        }
        guard currencyCode.utf8.count == 3, currencyCode.isASCIIDigits else {
            throw .payloadInvalid("currencyCode is not ISO 4217 numeric")
        }
        guard transactionAmount >= 0 else { throw .payloadInvalid("transactionAmount is negative") }
        switch paymentDataType {
        case "3DSecure":
            guard paymentData.onlinePaymentCryptogram?.isEmpty == false else {
                throw .payloadInvalid("3DSecure payload lacks onlinePaymentCryptogram")
            }
        case "EMV":
            guard paymentData.emvData?.isEmpty == false else { throw .payloadInvalid("EMV payload lacks emvData") }
        default:
            throw .payloadInvalid("unknown paymentDataType")
        }
    }

    /// A copy safe to show: PAN reduced to its last four digits, cryptogram/EMV/PIN data and authentication data
    /// replaced by "***".
    public var masked: DecryptedPaymentData {
        var copy = self
        let pan = applicationPrimaryAccountNumber
        copy.applicationPrimaryAccountNumber = String(repeating: "*", count: max(pan.count - 4, 0)) + pan.suffix(4)
        copy.paymentData = paymentData.masked
        copy.authenticationResponses = authenticationResponses?.map(\.masked)
        return copy
    }

    public var description: String {
        let safe = masked
        return "DecryptedPaymentData(pan: \(safe.applicationPrimaryAccountNumber), amount: \(transactionAmount), "
            + "currency: \(currencyCode), type: \(paymentDataType))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["masked": description], displayStyle: .struct)
    }
}

extension String {
    /// Non-empty and only ASCII digits (checked on UTF-8, which is much cheaper than Character iteration).
    fileprivate var isASCIIDigits: Bool { !isEmpty && utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
}
