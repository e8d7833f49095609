import ApplePay
import Foundation
import PaymentStages
import Pipeline
import Testing

/// The authorize worker on the real RabbitMQ and PostgreSQL: payments advance `decrypted → prepared` with their
/// claims stored encrypted and a hand-off to submit; every validation error ends the payment `failed` with its
/// code and a hand-off to notify.
extension Integration {
@Suite struct AuthorizeStageTests {
    static let pan = "5100000000000511"
    static let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="

    static func card(currencyCode: String = "826", amount: Int64 = 2000, expiry: String = "300731") -> DecryptedPaymentData {
        DecryptedPaymentData(
            applicationPrimaryAccountNumber: pan, applicationExpirationDate: expiry, currencyCode: currencyCode,
            transactionAmount: amount, deviceManufacturerIdentifier: "040010030273", paymentDataType: "3DSecure",
            paymentData: .init(onlinePaymentCryptogram: cryptogram, eciIndicator: "2"))
    }

    static func stored(_ card: DecryptedPaymentData? = card(), walletToken: String? = nil) -> StoredPaymentData {
        StoredPaymentData(
            decrypted: card, walletToken: walletToken, paymentMethodDisplayName: "MasterCard 0511", paymentMethodNetwork: "MasterCard",
            billingContact: ["givenName": "Ada", "familyName": "Lovelace", "postalCode": "N1 9GU", "countryCode": "GB"],
            shippingContact: ["emailAddress": "ada@example.com"])
    }

    static let walletToken = #"{"paymentData":{"version":"EC_v1","data":"c2VhbGVk"},"transactionIdentifier":"AB12"}"#

    /// Merchants every test uses: merchant-decrypts (default AUTH) and gateway-decrypts (THREEDQUERY + AUTH).
    static func applyStandardMerchants(_ harness: AuthorizeHarness) throws {
        try harness.applyMerchant("authz-md", gateway: AuthorizeHarness.gateway(mode: "merchant-decrypts"), identity: true)
        try harness.applyMerchant(
            "authz-gd", gateway: AuthorizeHarness.gateway(mode: "gateway-decrypts", requestTypes: ["THREEDQUERY", "AUTH"]), identity: false)
    }

    @Test func paymentsAdvanceWithTheirClaimsStoredEncrypted() throws {
        let harness = try AuthorizeHarness()
        defer { harness.tearDown() }
        try Self.applyStandardMerchants(harness)
        let direct = try harness.insertPayment(merchantId: "authz-md", amount: 2000, currency: "GBP", orderReference: "ORDER-0002", data: Self.stored())
        let viaGateway = try harness.insertPayment(
            merchantId: "authz-gd", amount: 1500, currency: "EUR", orderReference: nil, data: Self.stored(nil, walletToken: Self.walletToken))
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish([direct, viaGateway])

        let handedOff = try harness.handOffs(in: Stage.submit.queueName, for: [direct.paymentId, viaGateway.paymentId])
        #expect(handedOff == [direct.paymentId: 1, viaGateway.paymentId: 1])
        #expect(try harness.payment(direct.paymentId)?.status == .prepared)
        #expect(try harness.payment(viaGateway.paymentId)?.status == .prepared)
        #expect(try harness.payment(direct.paymentId)?.stage == .submit)
        #expect(try harness.events(direct.paymentId) == ["decrypted→prepared by authorize"])

        // Merchant-decrypts: the row names the order and request types in clear, the claims only sealed.
        let row = try #require(try harness.requestRow(direct.paymentId))
        #expect(row.orderReference == "ORDER-0002")
        #expect(row.requestTypes == "AUTH")
        for plaintext in [Self.pan, Self.cryptogram, "\"pan\"", "ORDER-0002", "07/2030"] {
            #expect(row.ciphertext.firstRange(of: Array(plaintext.utf8)) == nil, "ciphertext must not contain \(plaintext.prefix(4))…")
        }
        let stored = try #require(try harness.storedRequest(direct.paymentId))
        let payment = try #require(try harness.payment(direct.paymentId))
        let expected = try TrustPaymentsClaimsBuilder.build(
            gateway: try harness.merchant("authz-md")?.config.gateway, jwtSecret: AuthorizeHarness.jwtSecret,
            payment: GatewayPaymentDetails(paymentId: payment.id, orderReference: payment.orderReference, amountMinor: payment.amountMinor,
                                     currency: payment.currency), data: Self.stored(), issuedAt: AuthorizeHarness.issuedAt)
        #expect(stored == expected, "exactly the builder's claims, under the data key")
        #expect(stored.claims["payload"]?["pan"]?.stringValue == Self.pan)
        #expect(stored.claims["payload"]?["expirydate"]?.stringValue == "07/2030")
        #expect(stored.claims["payload"]?["tavv"]?.stringValue == Self.cryptogram)
        #expect(stored.claims["payload"]?["eci"]?.stringValue == "2")

        // Gateway-decrypts: order reference falls back to the payment id; the token travels as a string.
        let gatewayRow = try #require(try harness.requestRow(viaGateway.paymentId))
        #expect(gatewayRow.orderReference == viaGateway.paymentId.uuidString.lowercased())
        #expect(gatewayRow.requestTypes == "THREEDQUERY,AUTH")
        #expect(gatewayRow.ciphertext.firstRange(of: Array("transactionIdentifier".utf8)) == nil)
        let gatewayRequest = try #require(try harness.storedRequest(viaGateway.paymentId))
        // The one wallettoken shape: the job's PKPaymentToken as {"token": …}.
        #expect(gatewayRequest.claims["payload"]?["wallettoken"]?.stringValue == #"{"token":\#(Self.walletToken)}"#)
        #expect(gatewayRequest.claims["payload"]?["currencyiso3a"]?.stringValue == "EUR")
        #expect(gatewayRequest.claims["payload"]?["baseamount"]?.stringValue == "1500")

        for line in harness.logSink.lines {
            #expect(!line.contains(Self.pan) && !line.contains(Self.cryptogram) && !line.contains(AuthorizeHarness.jwtSecret))
        }
    }

    @Test func redeliveryReusesTheStoredRequestAndHandsOffAgain() throws {
        let harness = try AuthorizeHarness()
        defer { harness.tearDown() }
        try Self.applyStandardMerchants(harness)
        let message = try harness.insertPayment(merchantId: "authz-md", amount: 2000, currency: "GBP", orderReference: "ORDER-0003", data: Self.stored())
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish([message])
        _ = try harness.handOffs(in: Stage.submit.queueName, for: [message.paymentId])
        let first = try #require(try harness.requestRow(message.paymentId))

        // A duplicate hand-off (redelivery, reconciler re-drive) finds the payment prepared: same hand-off, no new request.
        try harness.publish([message, message])
        #expect(try harness.handOffs(in: Stage.submit.queueName, for: [message.paymentId], atLeast: 2) == [message.paymentId: 2])
        let again = try #require(try harness.requestRow(message.paymentId))
        #expect(again.ciphertext == first.ciphertext, "the stored request was not rebuilt or re-sealed")
        #expect(try harness.events(message.paymentId) == ["decrypted→prepared by authorize"])
    }

    struct Invalid: CustomTestStringConvertible {
        let code: String
        let merchantId: String
        var amount: Int64? = 2000
        var currency: String? = "GBP"
        var data: StoredPaymentData? = AuthorizeStageTests.stored()
        var purge = false
        var testDescription: String { code }
    }

    @Test func eachValidationErrorEndsThePaymentFailedWithItsCode() throws {
        let harness = try AuthorizeHarness()
        defer { harness.tearDown() }
        try Self.applyStandardMerchants(harness)
        try harness.applyMerchant("authz-none", gateway: nil, identity: false)
        try harness.applyMerchant("authz-nosecret", gateway: AuthorizeHarness.gateway(mode: "merchant-decrypts", secret: nil), identity: true)
        try harness.applyMerchant("authz-refund", gateway: AuthorizeHarness.gateway(mode: "merchant-decrypts", requestTypes: ["REFUND"]), identity: true)
        let cases = [
            Invalid(code: "invalid_currency", merchantId: "authz-md", currency: "EUR"),  // token is GBP (826)
            Invalid(code: "invalid_currency", merchantId: "authz-md", currency: "XXX"),  // not ISO 4217
            Invalid(code: "invalid_amount", merchantId: "authz-md", amount: nil),
            Invalid(code: "invalid_amount", merchantId: "authz-md", amount: 2001),  // token says 2000
            Invalid(code: "merchant_not_configured", merchantId: "authz-none"),
            Invalid(code: "merchant_not_configured", merchantId: "authz-nosecret"),
            Invalid(code: "invalid_request_types", merchantId: "authz-refund"),
            Invalid(code: "card_data_missing", merchantId: "authz-md", data: nil),
            Invalid(code: "card_data_missing", merchantId: "authz-md", purge: true),
            Invalid(code: "card_data_missing", merchantId: "authz-gd", data: Self.stored(nil, walletToken: nil)),
            Invalid(code: "invalid_card_data", merchantId: "authz-md", data: Self.stored(Self.card(expiry: "301331"))),
        ]
        var expectedCodes: [UUID: String] = [:]
        var messages: [StageMessage] = []
        for invalid in cases {
            let message = try harness.insertPayment(
                merchantId: invalid.merchantId, amount: invalid.amount, currency: invalid.currency, orderReference: "ORDER-\(invalid.code)",
                data: invalid.data)
            if invalid.purge {
                let database = try harness.database()
                defer { database.close() }
                // As the terminal-purge trigger shreds it: a payment whose card data is gone before it is authorised.
                try database.query("UPDATE card_data SET nonce = NULL, ciphertext = NULL, purged_at = now() WHERE payment_id = $1", [message.paymentId])
            }
            expectedCodes[message.paymentId] = invalid.code
            messages.append(message)
        }
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish(messages)

        let notified = try harness.handOffs(in: Stage.notify.queueName, for: Set(expectedCodes.keys))
        #expect(notified.count == cases.count)
        for (id, code) in expectedCodes.sorted(by: { $0.value < $1.value }) {
            let payment = try #require(try harness.payment(id))
            #expect(payment.status == .failed, "\(code)")
            #expect(payment.errorCode == code)
            #expect(payment.stage == .notify)
            #expect(payment.errorMessage?.isEmpty == false)
            #expect(payment.errorMessage?.contains(Self.pan) == false)
            #expect(try harness.requestRow(id) == nil, "\(code): nothing is stored for a failed payment")
            #expect(try harness.events(id) == ["decrypted→failed by pipeline"])
            #expect(try harness.cardDataHeld(id) == false, "\(code): card data is shredded when the payment fails")
        }
    }

    /// The two workers chained: a minted token decrypted by the decrypt worker is prepared by the authorize worker
    /// from exactly what decrypt stored (the sandbox merchant, as `scripts/demo` configures it).
    @Test func aJobDecryptedUpstreamIsPreparedFromWhatDecryptStored() throws {
        let decrypt = try DecryptHarness()  // resets paypipe_test and the broker, applies the sandbox merchant
        let decryptRuntime = try decrypt.startedRuntime()
        defer { decryptRuntime.stopAndWait() }
        let stage = AuthorizeStage(
            directory: MerchantDirectory(store: MerchantStore(vault: decrypt.vault), ttl: 0),
            cardData: CardDataStore(vault: decrypt.vault), requests: GatewayRequestStore(vault: decrypt.vault))
        let authorizeRuntime = try StageRuntime(
            handler: stage, configuration: decrypt.base.configuration,
            logger: Logger(component: "authorize", threshold: .debug, sink: decrypt.base.logSink),
            components: ReconcilerComponent.components(for: stage))
        try authorizeRuntime.start()
        defer { authorizeRuntime.stopAndWait() }

        try decrypt.publishJobs([try decrypt.job("chain-1", token: decrypt.token())])
        try TestServices.eventually("prepared") { try decrypt.outcome("chain-1")?.status == "prepared" }
        try TestServices.eventually("hand-off to submit") { try decrypt.base.depth(Stage.submit.queueName) == 1 }
        let database = try TestServices.database()
        defer { database.close() }
        let id = try database.query("SELECT id FROM payments WHERE job_id = 'chain-1'")[0].decode("id", as: UUID.self)
        let request = try #require(try GatewayRequestStore(vault: decrypt.vault).load(id, on: database))
        #expect(request.orderReference == "order-chain-1")
        let payload = try #require(request.claims["payload"])
        #expect(payload["sitereference"]?.stringValue == "test_paypipe00001")
        #expect(payload["baseamount"]?.stringValue == "1099")
        #expect(payload["currencyiso3a"]?.stringValue == "GBP")
        #expect(payload["pan"]?.stringValue == "4111111111111111")
        #expect(payload["expirydate"]?.stringValue == "12/2029")
        #expect(payload["tavv"]?.stringValue == "AOOkA5VbH8mMAAKhnQNnAoABFA==")
        #expect(payload["eci"]?.stringValue == "7")
        #expect(payload["walletdisplayname"]?.stringValue == "Visa 1111")
        // The sandbox merchant is on the webservices transport: the claims name its Webservices user.
        #expect(request.claims["iss"]?.stringValue == "ws@paypipe.sandbox")
        for line in decrypt.base.logSink.lines {
            #expect(!line.contains("4111111111111111") && !line.contains("AOOkA5VbH8mMAAKhnQNnAoABFA=="))
        }
    }
}
}
