import Foundation
import JWT
import Pipeline

/// Why a connector cannot build a request for a payment: permanent (the payment ends `failed` with ``code``). The
/// reason names the field, never card data or secrets.
public struct ConnectorBuildError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let reason: String

    public init(code: String, reason: String) {
        self.code = code
        self.reason = reason
    }

    init(_ error: AuthorizeError) {
        self.init(code: error.code, reason: error.reason)
    }

    public static func notConfigured(_ reason: String) -> ConnectorBuildError { ConnectorBuildError(AuthorizeError.merchantNotConfigured(reason)) }

    public var description: String { "\(code): \(reason)" }
}

/// The authorize stage's one entry point for building the stored request of any connector, chosen by the merchant's
/// `gateway.type` (``ConnectorPlugin/request(gateway:secrets:payment:data:issuedAt:)``). Pure.
public enum ConnectorRequestBuilder {
    public static func build(
        gateway: MerchantConfig.Gateway?, secrets: MerchantSecrets?, payment: GatewayPaymentDetails, data: StoredPaymentData?, issuedAt: Date
    ) throws(ConnectorBuildError) -> GatewayRequest {
        guard let gateway else { throw .notConfigured("the merchant has no gateway configuration") }
        return try gateway.connector.plugin.request(gateway: gateway, secrets: secrets, payment: payment, data: data, issuedAt: issuedAt)
    }

    /// The payment's currency and positive amount, or the authorize stage's codes.
    static func amount(_ payment: GatewayPaymentDetails) throws(ConnectorBuildError) -> (Currency, Int64) {
        guard let code = payment.currency, code.utf8.count == 3, let currency = Currency.alpha3(code) else {
            throw ConnectorBuildError(AuthorizeError.invalidCurrency("the payment has no ISO 4217 alpha-3 currency"))
        }
        guard let amount = payment.amountMinor, amount > 0 else {
            throw ConnectorBuildError(AuthorizeError.invalidAmount("the payment has no positive amount"))
        }
        return (currency, amount)
    }
}

/// The decrypted network-token fields every merchant-decrypts connector sends, checked against the payment.
struct NetworkTokenFields: Sendable {
    let dpan: String
    /// `MM` and `YYYY`.
    let expiryMonth: String
    let expiryYear: String
    let cryptogram: String
    let eci: String?

    init(_ data: StoredPaymentData?, currency: Currency, amount: Int64) throws(ConnectorBuildError) {
        guard let card = data?.decrypted else {
            throw ConnectorBuildError(AuthorizeError.cardDataMissing("merchant-decrypts mode needs decrypted card data, which is absent"))
        }
        guard Currency.numeric(card.currencyCode) == currency, card.transactionAmount == amount else {
            throw ConnectorBuildError(AuthorizeError.invalidAmount("the payment's amount or currency differs from the token's"))
        }
        let digits = card.applicationPrimaryAccountNumber.utf8
        guard (12...19).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw ConnectorBuildError(AuthorizeError.invalidCardData("applicationPrimaryAccountNumber is not a 12-19 digit PAN"))
        }
        guard let cryptogram = card.paymentData.onlinePaymentCryptogram, !cryptogram.isEmpty else {
            throw ConnectorBuildError(AuthorizeError.cardDataMissing("the token has no onlinePaymentCryptogram (EMV tokens are not supported)"))
        }
        let expiry: String
        do {
            expiry = try ApplePayPaymentForm.expiryDate(fromYYMMDD: card.applicationExpirationDate)
        } catch {
            throw ConnectorBuildError(error)
        }
        dpan = card.applicationPrimaryAccountNumber
        expiryMonth = String(expiry.prefix(2))
        expiryYear = String(expiry.suffix(4))
        self.cryptogram = cryptogram
        eci = card.paymentData.eciIndicator.flatMap { $0.isEmpty ? nil : $0 }
    }
}
