import Foundation

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
    public static func decode(_ plaintext: [UInt8]) throws(ApplePayError) -> DecryptedPaymentData {
        let value: DecryptedPaymentData
        do {
            value = try JSONDecoder().decode(DecryptedPaymentData.self, from: Data(plaintext))
        } catch DecodingError.keyNotFound(let key, _) {
            throw .payloadInvalid("decrypted payload lacks \(key.stringValue)")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            throw .payloadInvalid("decrypted payload has a wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))")
        } catch {
            throw .payloadInvalid("decrypted payload is not valid JSON")
        }
        try value.validate()
        return value
    }

    private func validate() throws(ApplePayError) {
        guard !applicationPrimaryAccountNumber.isEmpty, applicationPrimaryAccountNumber.allSatisfy(\.isASCIIDigit) else {
            throw .payloadInvalid("applicationPrimaryAccountNumber is not numeric")
        }
        guard applicationExpirationDate.count == 6, applicationExpirationDate.allSatisfy(\.isASCIIDigit) else {
            throw .payloadInvalid("applicationExpirationDate is not YYMMDD")
        }
        guard currencyCode.count == 3, currencyCode.allSatisfy(\.isASCIIDigit) else {
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

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
