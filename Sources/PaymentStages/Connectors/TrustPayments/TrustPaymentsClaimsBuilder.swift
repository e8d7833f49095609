import Foundation
import JWT
import Pipeline

/// Builds the claims of a Trust Payments request JWT from a payment, its merchant's gateway settings and the
/// stored card data (trustpayments.md §2 and §6). Pure: no clock, no I/O, so every claim is testable byte for byte.
///
/// Everything is validated before anything is built, so a payment either gets a complete, signable request or one
/// classified ``AuthorizeError``. The claims are ordered deterministically (``JSONValue`` keeps insertion order),
/// which makes the stored request and its signature reproducible.
///
/// Mode decides how the Apple Pay payment travels:
/// - **merchant-decrypts**: `walletsource` `APPLEPAY`, `pan` (the device PAN), `expirydate` `MM/YYYY`, `tavv`
///   (the online payment cryptogram), `eci` when the token has one, `walletdisplayname`;
/// - **gateway-decrypts**: `walletsource` `APPLEPAY` and `wallettoken`, one shape whatever the job carried
///   (``walletToken(_:)``).
public enum TrustPaymentsClaimsBuilder {
    /// The request-type sequences the pipeline can complete server-side.
    public static let supportedRequestTypes: [[String]] = [["AUTH"], ["THREEDQUERY", "AUTH"]]
    /// `baseamount` is Numeric(13).
    public static let maximumBaseAmount: Int64 = 9_999_999_999_999
    /// Gateway types (lower-cased, without `-`/`_`) this builder speaks for. Secure Trading is Trust Payments'
    /// former name and its hosts still serve the API.
    public static let supportedGatewayTypes: Set<String> = ["trustpayments", "securetrading"]

    /// Validates and builds the request.
    ///
    /// - Parameters:
    ///   - gateway: the merchant's gateway settings (`nil` = not configured).
    ///   - jwtSecret, webservicesPassword: only the transport's one is checked, for presence; a request that could
    ///     never be sent must fail now, before anything is stored, not at send time.
    ///   - issuedAt: the initial `iat`; the submit stage replaces it when signing (``signedJWT(claims:secret:issuedAt:)``).
    ///
    /// The claims are the same for both transports: `jwt` signs them, `webservices` sends their `payload` as the
    /// request object of the `/json/` envelope (``TrustPaymentsClient``).
    public static func build(
        gateway: MerchantConfig.Gateway?, jwtSecret: String?, webservicesPassword: String? = nil, payment: GatewayPaymentDetails,
        data: StoredPaymentData?, issuedAt: Date
    ) throws(AuthorizeError) -> GatewayRequest {
        let gateway = try validated(gateway, secret: gateway?.resolvedTransport == .webservices ? webservicesPassword : jwtSecret)
        let (currency, amount) = try validatedAmount(payment)
        if case .charge(let reason, _, let references) = payment.storedCredential {
            return try merchantInitiated(gateway: gateway, payment: payment, currency: currency, amount: amount, reason: reason,
                                         references: references, data: data, issuedAt: issuedAt)
        }
        guard let data else {
            throw .cardDataMissing("no stored payment data for this payment (never stored, or already purged)")
        }
        let orderReference = payment.gatewayOrderReference
        var payload: [(key: String, value: JSONValue)] = [
            ("accounttypedescription", "ECOM"),
            ("sitereference", .string(gateway.siteReference)),
            ("currencyiso3a", .string(currency.code)),
            ("baseamount", .string(String(amount))),
            ("orderreference", .string(orderReference)),
            ("requesttypedescriptions", .array(gateway.requestTypes.map(JSONValue.string))),
            ("walletsource", "APPLEPAY"),
        ]
        switch gateway.mode {
        case .merchantDecrypts:
            payload += try merchantDecryptsFields(data, currency: currency, amount: amount)
        case .gatewayDecrypts:
            guard let token = data.walletToken, !token.isEmpty else {
                throw .cardDataMissing("gateway-decrypts mode needs the stored Apple Pay token, which is absent")
            }
            payload.append(("wallettoken", .string(try walletToken(token))))
        }
        if case .store(let usage) = payment.storedCredential {
            payload += TrustPaymentsStoredCredentials.initialFields(usage).map { ($0.0, .string($0.1)) }
        }
        return request(gateway: gateway, orderReference: orderReference, requestTypes: gateway.requestTypes, payload: payload, data: data, issuedAt: issuedAt)
    }

    /// The claims of `payload` with the job's contacts, for the gateway's user.
    private static func request(
        gateway: MerchantConfig.Gateway, orderReference: String, requestTypes: [String], payload: [(key: String, value: JSONValue)],
        data: StoredPaymentData?, issuedAt: Date
    ) -> GatewayRequest {
        let payload = payload + TrustPaymentsContactFields.fields(prefix: "billing", contact: data?.billingContact)
            + TrustPaymentsContactFields.fields(prefix: "customer", contact: data?.shippingContact)
        let claims: JSONValue = [
            "iss": .string(gateway.username ?? ""),
            "iat": .integer(seconds(issuedAt)),
            "payload": .object(payload),
        ]
        return GatewayRequest(orderReference: orderReference, requestTypes: requestTypes, claims: claims)
    }

    /// A merchant-initiated child AUTH: no wallet or card fields (the child "inherits the previously stored payment …
    /// details" of its parent [doc: help.trustpayments.com/hc/en-us/articles/4402772396817]), the parent's
    /// `transactionreference` and the reason's fields (``TrustPaymentsStoredCredentials``), and `AUTH` alone: the
    /// customer is absent, so there is no 3-D Secure step.
    private static func merchantInitiated(
        gateway: MerchantConfig.Gateway, payment: GatewayPaymentDetails, currency: Currency, amount: Int64, reason: MITReason,
        references: [String: String], data: StoredPaymentData?, issuedAt: Date
    ) throws(AuthorizeError) -> GatewayRequest {
        guard let parent = references[TrustPaymentsStoredCredentials.parentReference], !parent.isEmpty else {
            throw .cardDataMissing("the stored credential holds no parent transaction reference")
        }
        guard let fields = TrustPaymentsStoredCredentials.merchantInitiatedFields(reason, parentTransactionReference: parent) else {
            throw .cardDataMissing("no merchant-initiated fields for the reason \(reason.rawValue)")
        }
        let orderReference = payment.gatewayOrderReference
        let payload: [(key: String, value: JSONValue)] = [
            ("sitereference", .string(gateway.siteReference)),
            ("currencyiso3a", .string(currency.code)),
            ("baseamount", .string(String(amount))),
            ("orderreference", .string(orderReference)),
            ("requesttypedescriptions", .array([.string("AUTH")])),
        ] + fields.map { ($0.0, .string($0.1)) }
        return request(gateway: gateway, orderReference: orderReference, requestTypes: ["AUTH"], payload: payload, data: data, issuedAt: issuedAt)
    }

    /// Signs stored claims for sending, with `iat` replaced by `issuedAt` (HS256, header `{"alg":"HS256","typ":"JWT"}`).
    ///
    /// The gateway refuses a JWT whose `iat` is older than about 15 minutes, so a request is signed at send time
    /// rather than when it is built; only `iat` changes, so retries send the same order reference and content.
    /// `expiresIn` adds `exp = iat + expiresIn`: the submit stage bounds how late the gateway may still act on an
    /// AUTH, so a status query after that time can trust a "not found" (see ``TrustPaymentsClient/requestLifetime(totalTimeout:)``).
    /// Precondition: `claims` is a JSON object (as ``build(gateway:jwtSecret:payment:data:issuedAt:)`` and
    /// ``GatewayRequestStore/load(_:on:)`` guarantee).
    public static func signedJWT(
        claims: JSONValue, secret: String, issuedAt: Date, expiresIn: Int64? = nil, algorithm: JWTAlgorithm = .hs256
    ) -> String {
        var fresh = claims
        fresh.set(.integer(seconds(issuedAt)), forKey: "iat")
        if let expiresIn { fresh.set(.integer(seconds(issuedAt) + expiresIn), forKey: "exp") }
        return JWTSigner(algorithm: algorithm, key: Array(secret.utf8)).sign(fresh)
    }

    /// The one `wallettoken` shape (``ApplePayPaymentForm/walletToken(_:)``).
    public static func walletToken(_ text: String) throws(AuthorizeError) -> String { try ApplePayPaymentForm.walletToken(text) }

    /// `MM/YYYY` of a token's `YYMMDD` expiry (``ApplePayPaymentForm/expiryDate(fromYYMMDD:)``).
    public static func expiryDate(fromYYMMDD text: String) throws(AuthorizeError) -> String { try ApplePayPaymentForm.expiryDate(fromYYMMDD: text) }

    /// Integer seconds since the epoch (`iat` is a NumericDate; Trust Payments documents whole seconds).
    static func seconds(_ date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970.rounded(.down))
    }

    // MARK: Validation

    /// Site references look like `test_site12345`: ASCII letters, digits, `_` and `-`.
    private static func isSiteReferenceByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    private static func validated(_ gateway: MerchantConfig.Gateway?, secret: String?) throws(AuthorizeError) -> MerchantConfig.Gateway {
        guard let gateway else { throw .merchantNotConfigured("the merchant has no gateway configuration") }
        let type = gateway.type.lowercased().filter { $0 != "-" && $0 != "_" && $0 != " " }
        guard supportedGatewayTypes.contains(type) else {
            throw .merchantNotConfigured("gateway type '\(gateway.type.prefix(32))' is not supported (use trustpayments)")
        }
        guard !gateway.siteReference.isEmpty, gateway.siteReference.utf8.count <= 255,
              gateway.siteReference.utf8.allSatisfy(isSiteReferenceByte)
        else {
            throw .merchantNotConfigured("the gateway site reference is missing or not alphanumeric")
        }
        let (user, password) = switch gateway.resolvedTransport {
        case .jwt: ("JWT username", "JWT secret")
        case .webservices: ("Webservices username", "Webservices password")
        }
        guard let username = gateway.username, !username.isEmpty, username.utf8.count <= 255 else {
            throw .merchantNotConfigured("the gateway \(user) is missing or longer than 255 characters")
        }
        guard let secret, !secret.isEmpty else {
            throw .merchantNotConfigured("the gateway \(password) is not configured")
        }
        guard supportedRequestTypes.contains(gateway.requestTypes) else {
            throw .invalidRequestTypes(gateway.requestTypes, supported: supportedRequestTypes)
        }
        return gateway
    }

    private static func validatedAmount(_ payment: GatewayPaymentDetails) throws(AuthorizeError) -> (Currency, Int64) {
        guard let code = payment.currency else { throw .invalidCurrency("the payment has no currency") }
        guard code.utf8.count == 3, let currency = Currency.alpha3(code) else {
            throw .invalidCurrency("'\(code.prefix(8))' is not an ISO 4217 alpha-3 currency code")
        }
        guard let amount = payment.amountMinor else { throw .invalidAmount("the payment has no amount") }
        guard amount > 0 else { throw .invalidAmount("the amount must be positive, got \(amount)") }
        guard amount <= maximumBaseAmount else {
            throw .invalidAmount("the amount \(amount) does not fit baseamount (at most 13 digits of minor units)")
        }
        return (currency, amount)
    }

    /// Card-network token fields of the "Apple Pay direct AUTH" integration (trustpayments.md §6.2).
    private static func merchantDecryptsFields(
        _ data: StoredPaymentData, currency: Currency, amount: Int64
    ) throws(AuthorizeError) -> [(key: String, value: JSONValue)] {
        guard let card = data.decrypted else {
            throw .cardDataMissing("merchant-decrypts mode needs decrypted card data, which is absent")
        }
        guard Currency.numeric(card.currencyCode) == currency else {
            throw .invalidCurrency("the payment currency \(currency.code) differs from the token's currency \(card.currencyCode.prefix(3))")
        }
        guard card.transactionAmount == amount else {
            throw .invalidAmount("the payment amount \(amount) differs from the token's amount \(card.transactionAmount)")
        }
        let pan = card.applicationPrimaryAccountNumber
        guard (12...19).contains(pan.utf8.count), pan.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw .invalidCardData("applicationPrimaryAccountNumber is not a 12-19 digit PAN")
        }
        guard let cryptogram = card.paymentData.onlinePaymentCryptogram, !cryptogram.isEmpty else {
            throw .cardDataMissing("the token has no onlinePaymentCryptogram (EMV tokens are not supported by this gateway mapping)")
        }
        var fields: [(key: String, value: JSONValue)] = [
            ("pan", .string(pan)),
            ("expirydate", .string(try expiryDate(fromYYMMDD: card.applicationExpirationDate))),
            ("tavv", .string(cryptogram)),
        ]
        if let eci = card.paymentData.eciIndicator, !eci.isEmpty {
            fields.append(("eci", .string(eci)))
        }
        if let displayName = data.paymentMethodDisplayName, !displayName.isEmpty {
            fields.append(("walletdisplayname", .string(displayName)))
        }
        return fields
    }
}
