import ApplePay
import Foundation
import JWT
@testable import PaymentStages
import Pipeline
import Testing

/// The Trust Payments claims builder, pure: every claim in both modes against expected JSON, expiry dates,
/// minor units, validation codes, and the signature recomputed independently.
@Suite struct AuthorizeClaimsTests {
    // MARK: Fixtures

    static let paymentId = UUID(uuidString: "6F1C2D3E-4A5B-4C6D-8E9F-0A1B2C3D4E5F")!
    static let issuedAt = Date(timeIntervalSince1970: 1_735_689_600)
    static let pan = "4111111111111111"
    static let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="
    static let secret = "paypipe-test-secret-not-real"
    /// As `PaymentJob` flattens an Apple Pay JS contact (addressLines joined by newlines).
    static let billingContact = [
        "givenName": "Ada", "familyName": "Lovelace", "addressLines": "12 Example Street\nFlat 3", "locality": "London",
        "administrativeArea": "Greater London", "postalCode": "N1 9GU", "countryCode": "gb", "country": "United Kingdom",
    ]
    /// As `PaymentJob` flattens a `PKContact` (`postalAddress` members), with email and phone.
    static let shippingContact = [
        "givenName": "Charles", "familyName": "Babbage", "street": "1 Analytical Row", "city": "Cambridge",
        "postalCode": "CB2 1TN", "isoCountryCode": "GB", "emailAddress": "charles@example.com", "phoneNumber": "+44 20 7946 0000",
    ]
    static let walletToken = #"{"paymentData":{"version":"EC_v1","data":"c2VhbGVk","signature":"c2ln","header":{"transactionId":"ab/cd"}},"transactionIdentifier":"AB"}"#

    static func gateway(
        mode: MerchantDocument.Gateway.Mode = .merchantDecrypts, requestTypes: [String] = ["AUTH"], type: String = "trustpayments",
        siteReference: String = "test_site12345", jwtUsername: String = "jwt.paypipe.test"
    ) -> MerchantConfig.Gateway {
        MerchantConfig.Gateway(
            type: type, baseUrl: "https://webservices.securetrading.net", siteReference: siteReference,
            jwtUsername: jwtUsername, mode: mode, requestTypes: requestTypes)
    }

    static func payment(amount: Int64? = 1050, currency: String? = "GBP", orderReference: String? = "ORDER-0001") -> GatewayPaymentDetails {
        GatewayPaymentDetails(paymentId: paymentId, orderReference: orderReference, amountMinor: amount, currency: currency)
    }

    static func card(
        currencyCode: String = "826", amount: Int64 = 1050, pan: String = pan, expiry: String = "291231",
        cryptogram: String? = cryptogram, eci: String? = "7"
    ) -> DecryptedPaymentData {
        DecryptedPaymentData(
            applicationPrimaryAccountNumber: pan, applicationExpirationDate: expiry, currencyCode: currencyCode,
            transactionAmount: amount, deviceManufacturerIdentifier: "040010030273", paymentDataType: "3DSecure",
            paymentData: .init(onlinePaymentCryptogram: cryptogram, eciIndicator: eci))
    }

    static func stored(
        card: DecryptedPaymentData? = card(), walletToken: String? = nil, displayName: String? = "Visa 1111",
        billing: [String: String]? = billingContact, shipping: [String: String]? = shippingContact
    ) -> StoredPaymentData {
        StoredPaymentData(
            decrypted: card, walletToken: walletToken, paymentMethodDisplayName: displayName, paymentMethodNetwork: "Visa",
            billingContact: billing, shippingContact: shipping)
    }

    static func build(
        gateway: MerchantConfig.Gateway? = gateway(), secret: String? = secret, payment: GatewayPaymentDetails = payment(),
        data: StoredPaymentData? = stored()
    ) throws(AuthorizeError) -> GatewayRequest {
        try TrustPaymentsClaimsBuilder.build(gateway: gateway, jwtSecret: secret, payment: payment, data: data, issuedAt: issuedAt)
    }

    /// Parses expected JSON written out in the test (object member order is significant for JSONValue equality).
    static func json(_ text: String) throws -> JSONValue {
        try JSONValue.parse(text)
    }

    // MARK: Claims in both modes

    @Test func merchantDecryptsClaimsMatchTheExpectedJSON() throws {
        let request = try Self.build()
        let expected = try Self.json("""
            {"iss":"jwt.paypipe.test","iat":1735689600,"payload":{
              "accounttypedescription":"ECOM","sitereference":"test_site12345","currencyiso3a":"GBP","baseamount":"1050",
              "orderreference":"ORDER-0001","requesttypedescriptions":["AUTH"],"walletsource":"APPLEPAY",
              "pan":"4111111111111111","expirydate":"12/2029","tavv":"AgAAAAAABk4DWZ4C28yUQAAAAAA=","eci":"7",
              "walletdisplayname":"Visa 1111",
              "billingfirstname":"Ada","billinglastname":"Lovelace","billingpremise":"12 Example Street","billingstreet":"Flat 3",
              "billingtown":"London","billingcounty":"Greater London","billingpostcode":"N1 9GU","billingcountryiso2a":"GB",
              "customerfirstname":"Charles","customerlastname":"Babbage","customerpremise":"1 Analytical Row",
              "customertown":"Cambridge","customerpostcode":"CB2 1TN","customercountryiso2a":"GB",
              "customeremail":"charles@example.com","customertelephone":"+44 20 7946 0000"}}
            """)
        #expect(request.claims == expected)
        #expect(request.claims.serialized() == expected.serialized())
        #expect(request.orderReference == "ORDER-0001")
        #expect(request.requestTypes == ["AUTH"])
    }

    @Test func gatewayDecryptsClaimsCarryTheWalletTokenAsAJSONString() throws {
        let request = try Self.build(
            gateway: Self.gateway(mode: .gatewayDecrypts, requestTypes: ["THREEDQUERY", "AUTH"]),
            data: Self.stored(card: nil, walletToken: Self.walletToken, billing: nil, shipping: nil))
        let expected = try Self.json(#"""
            {"iss":"jwt.paypipe.test","iat":1735689600,"payload":{
              "accounttypedescription":"ECOM","sitereference":"test_site12345","currencyiso3a":"GBP","baseamount":"1050",
              "orderreference":"ORDER-0001","requesttypedescriptions":["THREEDQUERY","AUTH"],"walletsource":"APPLEPAY",
              "wallettoken":"{\"token\":{\"paymentData\":{\"version\":\"EC_v1\",\"data\":\"c2VhbGVk\",\"signature\":\"c2ln\",\"header\":{\"transactionId\":\"ab/cd\"}},\"transactionIdentifier\":\"AB\"}}"}}
            """#)
        #expect(request.claims == expected)
        #expect(request.claims["payload"]?["pan"] == nil, "no card fields in gateway-decrypts mode")
        #expect(request.requestTypes == ["THREEDQUERY", "AUTH"])
    }

    @Test func gatewayDecryptsIgnoresDecryptedCardDataEvenIfPresent() throws {
        let request = try Self.build(
            gateway: Self.gateway(mode: .gatewayDecrypts), data: Self.stored(walletToken: Self.walletToken, billing: nil, shipping: nil))
        let keys = request.claims["payload"]?.objectValue?.map(\.key)
        #expect(keys == ["accounttypedescription", "sitereference", "currencyiso3a", "baseamount", "orderreference",
                         "requesttypedescriptions", "walletsource", "wallettoken"])
    }

    @Test func optionalAppleFieldsAreOmittedWhenTheTokenHasNone() throws {
        let request = try Self.build(data: Self.stored(card: Self.card(eci: nil), displayName: nil, billing: nil, shipping: nil))
        let expected = try Self.json("""
            {"iss":"jwt.paypipe.test","iat":1735689600,"payload":{
              "accounttypedescription":"ECOM","sitereference":"test_site12345","currencyiso3a":"GBP","baseamount":"1050",
              "orderreference":"ORDER-0001","requesttypedescriptions":["AUTH"],"walletsource":"APPLEPAY",
              "pan":"4111111111111111","expirydate":"12/2029","tavv":"AgAAAAAABk4DWZ4C28yUQAAAAAA="}}
            """)
        #expect(request.claims == expected)
    }

    @Test(arguments: [nil, ""])
    func orderReferenceFallsBackToThePaymentId(orderReference: String?) throws {
        let request = try Self.build(payment: Self.payment(orderReference: orderReference))
        #expect(request.orderReference == "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f")
        #expect(request.claims["payload"]?["orderreference"] == .string(request.orderReference))
    }

    @Test func buildingTwiceGivesTheSameBytes() throws {
        #expect(try Self.build().claims.serialized() == Self.build().claims.serialized())
    }

    // MARK: Contacts

    @Test func contactsOmitWhatTheGatewayWouldRejectInsteadOfFailing() throws {
        let long = String(repeating: "x", count: 128)
        let request = try Self.build(data: Self.stored(
            billing: ["givenName": "  Ada   King ", "familyName": long, "administrativeArea": "Surrey", "countryCode": "GBR",
                      "postalCode": "", "emailAddress": "ada@example.com"],
            shipping: ["addressLines": "\n  1 Main St \n\n Unit 2\nBack door", "countryCode": "us", "administrativeArea": "CA"]))
        let payload = try #require(request.claims["payload"])
        #expect(payload["billingfirstname"] == "Ada King", "whitespace normalised")
        #expect(payload["billinglastname"] == nil, "over 127 characters: left out, not truncated")
        #expect(payload["billingcountryiso2a"] == nil, "not a two-letter code")
        #expect(payload["billingcounty"] == nil, "a county is only sent with a country")
        #expect(payload["billingpostcode"] == nil)
        #expect(payload["billingemail"] == "ada@example.com")
        #expect(payload["customerpremise"] == "1 Main St")
        #expect(payload["customerstreet"] == "Unit 2, Back door")
        #expect(payload["customercounty"] == "CA")
        #expect(payload["customercountryiso2a"] == "US")
    }

    // MARK: Expiry dates

    @Test(arguments: [
        ("291231", "12/2029"), ("000101", "01/2000"), ("991231", "12/2099"), ("300101", "01/2030"),
        ("251130", "11/2025"), ("261200", "12/2026"), ("310228", "02/2031"),
    ])
    func expiryDateIsMonthSlashFourDigitYear(yymmdd: String, expected: String) throws {
        #expect(try TrustPaymentsClaimsBuilder.expiryDate(fromYYMMDD: yymmdd) == expected)
        let request = try Self.build(data: Self.stored(card: Self.card(expiry: yymmdd)))
        #expect(request.claims["payload"]?["expirydate"] == .string(expected))
    }

    @Test(arguments: ["", "2912", "2912311", "291331", "290031", "291232", "29123a", "２９１２３１"])
    func malformedExpiryDatesAreInvalidCardData(yymmdd: String) {
        #expect(throws: AuthorizeError.self) { try TrustPaymentsClaimsBuilder.expiryDate(fromYYMMDD: yymmdd) }
        #expect(Self.code { try Self.build(data: Self.stored(card: Self.card(expiry: yymmdd))) } == "invalid_card_data")
    }

    // MARK: Minor units

    @Test(arguments: [
        ("JPY", "392", Int64(1050), "1050"),   // ¥1,050: no decimals
        ("GBP", "826", Int64(1050), "1050"),   // £10.50
        ("BHD", "048", Int64(1050), "1050"),   // BD 1.050: three decimals
        ("BHD", "48", Int64(1), "1"),          // numeric code without its leading zero
        ("JPY", "392", Int64(9_999_999_999_999), "9999999999999"),
    ])
    func baseAmountIsAlwaysTheIntegerMinorUnits(currency: String, numeric: String, amount: Int64, expected: String) throws {
        let request = try Self.build(
            payment: Self.payment(amount: amount, currency: currency),
            data: Self.stored(card: Self.card(currencyCode: numeric, amount: amount)))
        #expect(request.claims["payload"]?["baseamount"] == .string(expected))
        #expect(request.claims["payload"]?["currencyiso3a"] == .string(currency))
        #expect(request.claims["payload"]?["mainamount"] == nil)
    }

    // MARK: Validation

    /// The classified code of a failing build, or "none".
    static func code(_ body: () throws -> GatewayRequest) -> String {
        do {
            _ = try body()
            return "none"
        } catch let error as AuthorizeError {
            return error.code
        } catch {
            return "unexpected \(error)"
        }
    }

    struct InvalidCase: Sendable, CustomTestStringConvertible {
        let name: String
        let code: String
        let build: @Sendable () throws -> GatewayRequest
        var testDescription: String { name }
    }

    static let invalidCases: [InvalidCase] = [
        InvalidCase(name: "no gateway", code: "merchant_not_configured") { try build(gateway: nil) },
        InvalidCase(name: "unsupported gateway type", code: "merchant_not_configured") { try build(gateway: gateway(type: "stripe")) },
        InvalidCase(name: "empty site reference", code: "merchant_not_configured") { try build(gateway: gateway(siteReference: "")) },
        InvalidCase(name: "site reference with spaces", code: "merchant_not_configured") { try build(gateway: gateway(siteReference: "test site")) },
        InvalidCase(name: "empty JWT username", code: "merchant_not_configured") { try build(gateway: gateway(jwtUsername: "")) },
        InvalidCase(name: "no JWT secret", code: "merchant_not_configured") { try build(secret: nil) },
        InvalidCase(name: "empty JWT secret", code: "merchant_not_configured") { try build(secret: "") },
        InvalidCase(name: "unsupported request type", code: "invalid_request_types") { try build(gateway: gateway(requestTypes: ["REFUND"])) },
        InvalidCase(name: "no request types", code: "invalid_request_types") { try build(gateway: gateway(requestTypes: [])) },
        InvalidCase(name: "AUTH before THREEDQUERY", code: "invalid_request_types") { try build(gateway: gateway(requestTypes: ["AUTH", "THREEDQUERY"])) },
        InvalidCase(name: "no currency", code: "invalid_currency") { try build(payment: payment(currency: nil)) },
        InvalidCase(name: "lower-case currency", code: "invalid_currency") { try build(payment: payment(currency: "gbp")) },
        InvalidCase(name: "unknown currency", code: "invalid_currency") { try build(payment: payment(currency: "XXX")) },
        InvalidCase(name: "numeric currency", code: "invalid_currency") { try build(payment: payment(currency: "826")) },
        InvalidCase(name: "currency differs from the token", code: "invalid_currency") { try build(payment: payment(currency: "EUR")) },
        InvalidCase(name: "no amount", code: "invalid_amount") { try build(payment: payment(amount: nil)) },
        InvalidCase(name: "zero amount", code: "invalid_amount") { try build(payment: payment(amount: 0)) },
        InvalidCase(name: "negative amount", code: "invalid_amount") { try build(payment: payment(amount: -5)) },
        InvalidCase(name: "amount over 13 digits", code: "invalid_amount") {
            try build(payment: payment(amount: 10_000_000_000_000), data: stored(card: card(amount: 10_000_000_000_000)))
        },
        InvalidCase(name: "amount differs from the token", code: "invalid_amount") { try build(payment: payment(amount: 1051)) },
        InvalidCase(name: "no stored data", code: "card_data_missing") { try build(data: nil) },
        InvalidCase(name: "merchant-decrypts without card data", code: "card_data_missing") { try build(data: stored(card: nil, walletToken: walletToken)) },
        InvalidCase(name: "gateway-decrypts without a token", code: "card_data_missing") {
            try build(gateway: gateway(mode: .gatewayDecrypts), data: stored(walletToken: nil))
        },
        InvalidCase(name: "gateway-decrypts with an empty token", code: "card_data_missing") {
            try build(gateway: gateway(mode: .gatewayDecrypts), data: stored(walletToken: ""))
        },
        InvalidCase(name: "no cryptogram (EMV token)", code: "card_data_missing") { try build(data: stored(card: card(cryptogram: nil))) },
        InvalidCase(name: "short PAN", code: "invalid_card_data") { try build(data: stored(card: card(pan: "41111111111"))) },
        InvalidCase(name: "non-numeric PAN", code: "invalid_card_data") { try build(data: stored(card: card(pan: "4111 1111 1111 1111"))) },
        InvalidCase(name: "bad expiry month", code: "invalid_card_data") { try build(data: stored(card: card(expiry: "291331"))) },
    ]

    @Test(arguments: invalidCases)
    func validationErrorsAreClassified(_ invalid: InvalidCase) {
        do {
            _ = try invalid.build()
            Issue.record("\(invalid.name) was accepted")
        } catch let error as AuthorizeError {
            #expect(error.code == invalid.code)
            for secretValue in [Self.pan, Self.cryptogram, Self.secret, "4111 1111 1111 1111", "41111111111"] {
                #expect(!error.reason.contains(secretValue), "the reason must not echo card data or secrets")
            }
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    /// The refusal names the sequences the connector declares, in the words stored as `error_message` before the
    /// authorize stage stopped spelling them itself.
    @Test func unsupportedRequestTypesNameTheConnectorsSequences() {
        do {
            _ = try Self.build(gateway: Self.gateway(requestTypes: ["REFUND"]))
            Issue.record("REFUND was accepted")
        } catch {
            #expect(error.reason == #"request types ["REFUND"] are not supported; use ["AUTH"] or ["THREEDQUERY", "AUTH"]"#)
        }
    }

    @Test func theValidFixtureIsAccepted() {
        #expect(Self.code { try Self.build() } == "none")
        #expect(Self.code { try Self.build(gateway: Self.gateway(type: "Secure-Trading")) } == "none")
    }

    // MARK: Signing

    /// HS256 of the merchant-decrypts claims with `iat` 1767225600, computed with the openssl CLI only:
    /// `printf %s "$(printf %s "$HEADER" | b64url).$(printf %s "$CLAIMS" | b64url)" | openssl dgst -sha256 -hmac "$SECRET" -binary | b64url`
    /// where `b64url` is `openssl base64 -A | tr '+/' '-_' | tr -d '='`, HEADER `{"alg":"HS256","typ":"JWT"}` and
    /// CLAIMS the expected JSON of `merchantDecryptsClaimsMatchTheExpectedJSON` written compactly.
    static let opensslVector =
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJqd3QucGF5cGlwZS50ZXN0IiwiaWF0IjoxNzY3MjI1NjAwLCJwYXlsb2F"
        + "kIjp7ImFjY291bnR0eXBlZGVzY3JpcHRpb24iOiJFQ09NIiwic2l0ZXJlZmVyZW5jZSI6InRlc3Rfc2l0ZTEyMzQ1IiwiY3VycmVuY3l"
        + "pc28zYSI6IkdCUCIsImJhc2VhbW91bnQiOiIxMDUwIiwib3JkZXJyZWZlcmVuY2UiOiJPUkRFUi0wMDAxIiwicmVxdWVzdHR5cGVkZXN"
        + "jcmlwdGlvbnMiOlsiQVVUSCJdLCJ3YWxsZXRzb3VyY2UiOiJBUFBMRVBBWSIsInBhbiI6IjQxMTExMTExMTExMTExMTEiLCJleHBpcnl"
        + "kYXRlIjoiMTIvMjAyOSIsInRhdnYiOiJBZ0FBQUFBQUJrNERXWjRDMjh5VVFBQUFBQUE9IiwiZWNpIjoiNyIsIndhbGxldGRpc3BsYXl"
        + "uYW1lIjoiVmlzYSAxMTExIiwiYmlsbGluZ2ZpcnN0bmFtZSI6IkFkYSIsImJpbGxpbmdsYXN0bmFtZSI6IkxvdmVsYWNlIiwiYmlsbGl"
        + "uZ3ByZW1pc2UiOiIxMiBFeGFtcGxlIFN0cmVldCIsImJpbGxpbmdzdHJlZXQiOiJGbGF0IDMiLCJiaWxsaW5ndG93biI6IkxvbmRvbiI"
        + "sImJpbGxpbmdjb3VudHkiOiJHcmVhdGVyIExvbmRvbiIsImJpbGxpbmdwb3N0Y29kZSI6Ik4xIDlHVSIsImJpbGxpbmdjb3VudHJ5aXN"
        + "vMmEiOiJHQiIsImN1c3RvbWVyZmlyc3RuYW1lIjoiQ2hhcmxlcyIsImN1c3RvbWVybGFzdG5hbWUiOiJCYWJiYWdlIiwiY3VzdG9tZXJ"
        + "wcmVtaXNlIjoiMSBBbmFseXRpY2FsIFJvdyIsImN1c3RvbWVydG93biI6IkNhbWJyaWRnZSIsImN1c3RvbWVycG9zdGNvZGUiOiJDQjI"
        + "gMVROIiwiY3VzdG9tZXJjb3VudHJ5aXNvMmEiOiJHQiIsImN1c3RvbWVyZW1haWwiOiJjaGFybGVzQGV4YW1wbGUuY29tIiwiY3VzdG9"
        + "tZXJ0ZWxlcGhvbmUiOiIrNDQgMjAgNzk0NiAwMDAwIn19.3wBqSpR04wLRbaMwBI94aep-vHi0whqd1VprlC38Dnw"

    @Test func signedJWTMatchesTheOpenSSLVector() throws {
        let request = try Self.build()
        let token = TrustPaymentsClaimsBuilder.signedJWT(
            claims: request.claims, secret: Self.secret, issuedAt: Date(timeIntervalSince1970: 1_767_225_600.9))
        #expect(token == Self.opensslVector)
    }

    @Test func reSigningOnlyReplacesIssuedAt() throws {
        let request = try Self.build()
        let later = Self.issuedAt.addingTimeInterval(3600)
        let token = TrustPaymentsClaimsBuilder.signedJWT(claims: request.claims, secret: Self.secret, issuedAt: later)
        let verified = try JWTVerifier(key: Array(Self.secret.utf8), maxAge: 900, now: { later }).verify(token)
        var expected = request.claims
        expected.set(.integer(1_735_693_200), forKey: "iat")
        #expect(verified.claims == expected, "same members in the same order; only iat moved")
        #expect(verified.claims.objectValue?.map(\.key) == ["iss", "iat", "payload"])
        #expect(verified.header.json == Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        // The stale original iat would be refused by a 15-minute gateway window.
        let stale = TrustPaymentsClaimsBuilder.signedJWT(claims: request.claims, secret: Self.secret, issuedAt: Self.issuedAt)
        #expect(throws: JWTError.expired(iatAge: 3600)) {
            try JWTVerifier(key: Array(Self.secret.utf8), maxAge: 900, now: { later }).verify(stale)
        }
    }

    @Test func signedJWTReproducesTheTrustPaymentsReferenceVector() throws {
        // trustpayments.md §2's composed example, re-signed through the stage's own entry point.
        let claims = try Self.json("""
            {"iss":"jwt.example.user","iat":0,"payload":{"accounttypedescription":"ECOM","sitereference":"test_site00000",
            "currencyiso3a":"GBP","baseamount":"1050","requesttypedescriptions":["THREEDQUERY","AUTH"],"orderreference":"ORDER-0001"}}
            """)
        let token = TrustPaymentsClaimsBuilder.signedJWT(
            claims: claims, secret: "example-secret-not-real", issuedAt: Date(timeIntervalSince1970: 1_735_689_600))
        #expect(token.hasSuffix(".Dwe48X8SKDR17EqgRktBcmb61YqrqGCvu0fxBe9a87w"))
    }

    // MARK: Masking

    @Test func redactorMasksCardFieldsWhereverTheyAppear() throws {
        let request = try Self.build()
        let masked = ClaimsRedactor.masked(request.claims)
        let payload = try #require(masked["payload"])
        #expect(payload["pan"] == "************1111")
        #expect(payload["tavv"] == "*** (28 bytes)")
        #expect(payload["expirydate"] == "**/****")
        #expect(payload["eci"] == "7", "not card data")
        #expect(payload["billingfirstname"] == "Ada")
        let nested = ClaimsRedactor.masked(["payload": ["jwt": "a.b.c", "response": [["wallettoken": "{}", "PAN": "5100000000000511"]]]])
        #expect(nested.serializedString == #"{"payload":{"jwt":"*** (5 bytes)","response":[{"wallettoken":"*** (2 bytes)","PAN":"************0511"}]}}"#)
        for text in [request.description, String(describing: request), String(reflecting: request)] {
            #expect(!text.contains(Self.pan) && !text.contains(Self.cryptogram) && !text.contains("12/2029"))
        }
    }

    /// One `wallettoken` shape ({"token": PKPaymentToken} as a JSON string) whatever the job carried.
    @Test func walletTokenHasOneShape() throws {
        let paymentData = #"{"version":"EC_v1","data":"c2VhbGVk","signature":"c2ln","header":{"transactionId":"ab"}}"#
        let expected = #"{"token":{"paymentData":\#(paymentData)}}"#
        #expect(try TrustPaymentsClaimsBuilder.walletToken(paymentData) == expected)
        #expect(try TrustPaymentsClaimsBuilder.walletToken(#"{"paymentData":\#(paymentData)}"#) == expected)
        #expect(try TrustPaymentsClaimsBuilder.walletToken(#"{"token":{"paymentData":\#(paymentData)}}"#) == expected)
        #expect(throws: AuthorizeError.self) { try TrustPaymentsClaimsBuilder.walletToken("[1]") }
        #expect(throws: AuthorizeError.self) { try TrustPaymentsClaimsBuilder.walletToken(#"{"colour":"red"}"#) }
    }
}
