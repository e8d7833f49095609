import ApplePay
import Foundation
import HTTP
import JWT
@testable import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
/// Each connector end to end on the real database: merchants applied as `paypipe merchant apply` does (validated, the
/// connector's secret sealed), payments prepared with the connector's request as the authorize stage builds it
/// (`ConnectorRequestBuilder`), and the real submit stage against the simulator's faces: authorised, declined, and a
/// lost answer reconciled by the reference with exactly one authorisation at the processor.
@Suite struct ConnectorEndToEndTests {
    static let entity = "8a8294174b7ecb28014b9699220015ca"

    final class Harness {
        let authorize: AuthorizeHarness
        let simulator: GatewaySimulator

        /// `appleTokenAPI`: the simulator's Apple merchant-token API face as well (off by default).
        init(appleTokenAPI: AppleTokenAPIFace? = nil) throws {
            authorize = try AuthorizeHarness()
            var configuration = GatewaySimulatorConfiguration(
                port: 0, merchants: ["jwt.paypipe.test": AuthorizeHarness.jwtSecret], slowResponseSeconds: 2.5, threads: 4)
            configuration.oppTokens = ["e2e-token": ConnectorEndToEndTests.entity]
            configuration.tapPayPartners = ["partner_e2e": "tappay_e2e"]
            configuration.appleTokenAPI = appleTokenAPI
            configuration.webservicesUsers = ["ws.paypipe.test": "ws-password"]   // the operations' Trust Payments merchant
            simulator = GatewaySimulator(configuration: configuration)
            try simulator.start()
            try authorize.applyMerchant("opp-m", gateway: [
                "type": "opp", "baseUrl": simulator.baseURL, "mode": "merchant-decrypts",
                "opp": ["entityId": ConnectorEndToEndTests.entity, "accessToken": "e2e-token", "paymentBrand": "VISA"],
            ], identity: true)
            var trustPayments = AuthorizeHarness.gateway(mode: "merchant-decrypts")
            trustPayments["baseUrl"] = simulator.baseURL
            try authorize.applyMerchant("tp-m", gateway: trustPayments, identity: true)
            try authorize.applyMerchant("tappay-m", gateway: tapPayGateway, identity: false)
        }

        /// The TapPay merchants' gateway: the simulator's TapPay face.
        var tapPayGateway: [String: Any] {
            ["type": "tappay", "baseUrl": simulator.baseURL, "mode": "gateway-decrypts", "tapPay": ["merchantId": "tappay_e2e", "partnerKey": "partner_e2e"]]
        }

        deinit {
            simulator.stop()
            authorize.tearDown()
        }

        func stage() -> SubmitStage {
            let http = HTTPClientConfiguration(connectTimeout: 0.5, totalTimeout: 1)
            let sandbox = CardDataTransportPolicy(deployment: .sandbox)
            return SubmitStage(
                directory: MerchantDirectory(store: MerchantStore(vault: authorize.vault), ttl: 0), requests: GatewayRequestStore(vault: authorize.vault),
                client: GatewayConnectors(trustPayments: TrustPaymentsClient(http: http, transport: sandbox), opp: OPPConnector(http: http, transport: sandbox),
                                          tapPay: TapPayConnector(http: http, transport: sandbox)),
                settings: SubmitSettings(reconcileGrace: 0.2, maxInconclusiveQueries: 2, sendWindow: 0.3))
        }

        /// A `decrypted` payment with its data, run through the real authorize stage, which builds the merchant's
        /// connector request (``ConnectorRequestBuilder``): the payment and the stage's outcome.
        func authorizing(_ merchant: String, amount: Int64, currency: String, data: StoredPaymentData) throws -> (StageMessage, Result<StageOutcome, StageFailure>) {
            let message = try authorize.insertPayment(merchantId: merchant, amount: amount, currency: currency, orderReference: "E2E-\(amount)", data: data)
            let database = try authorize.database()
            defer { database.close() }
            return (message, authorize.makeStage().process([message], database: database)[0])
        }

        /// A payment advanced to `prepared` by the authorize stage (``authorizing(_:amount:currency:data:)``).
        func prepared(_ merchant: String, amount: Int64, currency: String, data: StoredPaymentData) throws -> StageMessage {
            let (message, outcome) = try authorizing(merchant, amount: amount, currency: currency, data: data)
            #expect(outcome == .success(.handOff(to: .submit, message)), "authorize hands the payment to submit")
            return message
        }

        func process(_ stage: SubmitStage, _ message: StageMessage) throws -> Result<StageOutcome, StageFailure> {
            let database = try authorize.database()
            defer { database.close() }
            return stage.process([message], database: database)[0]
        }

        func status(_ message: StageMessage) throws -> PaymentStatus? { try authorize.payment(message.paymentId)?.status }

        /// The authorisations the processor holds for the payment (its reference starts with the order reference).
        func auths(_ prefix: String) -> Int {
            simulator.ledger.authCounts().filter { $0.key.hasPrefix(prefix + ".") }.values.reduce(0, +)
        }

        func ageAttempts(_ message: StageMessage) throws {
            let database = try authorize.database()
            defer { database.close() }
            try database.query(
                """
                UPDATE gateway_attempts SET started_at = started_at - interval '60 seconds', send_deadline = send_deadline - interval '60 seconds',
                       reconcile_after = reconcile_after - interval '60 seconds'
                WHERE payment_id = $1
                """, [message.paymentId])
        }
    }

    static func oppData(_ amount: Int64) -> StoredPaymentData {
        StoredPaymentData(decrypted: DecryptedPaymentDataFixture.card(amount: amount), walletToken: nil, paymentMethodDisplayName: nil,
                          paymentMethodNetwork: nil, billingContact: nil, shippingContact: nil)
    }

    static func tapPayData() -> StoredPaymentData {
        .tapPay(prime: "sim_\(Int64(Date().timeIntervalSince1970 * 1000))_\(UUID().uuidString.prefix(8))", publishedAt: Date(),
                billingContact: nil, shippingContact: nil)
    }

    static func transientCode(_ result: Result<StageOutcome, StageFailure>) -> String? {
        // A wait whose end is known is retried too, at that time.
        switch result {
        case .failure(.transient(let code, _)), .failure(.waiting(let code, _, _)): return code
        default: return nil
        }
    }

    @Test func applySealsTheConnectorsSecrets() throws {
        let harness = try Harness()
        let database = try harness.authorize.database()
        defer { database.close() }
        let configs = try database.query("SELECT config::text AS config FROM merchants WHERE id IN ('opp-m', 'tappay-m')").map { try $0.decode("config", as: String.self) }
        #expect(configs.count == 2)
        #expect(configs.allSatisfy { !$0.contains("e2e-token") && !$0.contains("partner_e2e") && ($0.contains("entityId") || $0.contains("tappay_e2e")) })
        #expect(try harness.authorize.merchant("opp-m")?.secrets.oppAccessToken == "e2e-token")
        #expect(try harness.authorize.merchant("tappay-m")?.secrets.tapPayPartnerKey == "partner_e2e")
        // A document its connector could never send with is refused before anything is stored.
        #expect(throws: MerchantStore.MerchantError.self) {
            try harness.authorize.applyMerchant("opp-bad", gateway: ["type": "opp", "baseUrl": harness.simulator.baseURL, "mode": "gateway-decrypts",
                                                                   "opp": ["entityId": Self.entity]], identity: false)
        }
        #expect(try harness.authorize.merchant("opp-bad") == nil)
        // Manual capture is every connector's (an OPP PA, a TapPay trade with no automatic capture); an unknown type has none.
        let manual: [(type: String, mode: String, settings: [String: Any])] = [
            ("opp", "merchant-decrypts", ["opp": ["entityId": Self.entity, "accessToken": "t", "paymentBrand": "VISA"]]),
            ("tappay", "gateway-decrypts", ["tapPay": ["merchantId": "tappay_e2e", "partnerKey": "p"]]),
        ]
        for document in manual {
            let gateway = document.settings.merging(["type": document.type, "baseUrl": harness.simulator.baseURL, "mode": document.mode,
                                                     "captureMode": "manual"]) { $1 }
            try harness.authorize.applyMerchant("\(document.type)-manual", gateway: gateway, identity: document.type == "opp")
            #expect(try harness.authorize.merchant("\(document.type)-manual")?.config.gateway?.captureMode == "manual")
        }
    }

    @Test func oppAuthorisesDeclinesAndReconcilesALostAnswer() throws {
        let harness = try Harness()
        let stage = harness.stage()
        let authorised = try harness.prepared("opp-m", amount: 1050, currency: "GBP", data: Self.oppData(1050))
        let first = try harness.process(stage, authorised)
        #expect(first == .success(.handOff(to: .notify, authorised)), "\(first)")
        #expect(try harness.status(authorised) == .authorized)
        let declined = try harness.prepared("opp-m", amount: 1051, currency: "GBP", data: Self.oppData(1051))
        _ = try harness.process(stage, declined)
        #expect(try harness.status(declined) == .declined)
        #expect(try harness.authorize.payment(declined.paymentId)?.errorCode == "gateway_800.100.151")
        let lost = try harness.prepared("opp-m", amount: 1096, currency: "GBP", data: Self.oppData(1096))
        #expect(Self.transientCode(try harness.process(stage, lost)) == "gateway_outcome_uncertain")
        try harness.ageAttempts(lost)
        #expect(try harness.process(stage, lost) == .success(.handOff(to: .notify, lost)))
        #expect(try harness.status(lost) == .authorized)
        #expect(harness.auths("E2E-1096") == 1)
        #expect(harness.auths("E2E-1050") == 1)
    }

    /// Issue 40, defect 1: an AUTH lost before OPP processed it. OPP's query answers "not found" as OPP does (HTTP 404,
    /// `700.400.580`); once confirmed, the AUTH is sent again, exactly once, and authorised, never left for review.
    @Test func oppAuthLostBeforeProcessingIsSentAgainOnceAfterAConfirmedNotFound() throws {
        let harness = try Harness()
        let stage = harness.stage()
        let message = try harness.prepared("opp-m", amount: 1060, currency: "GBP", data: Self.oppData(1060))
        let lose = harness.simulator.holds.hold(.init(requestType: "AUTH", orderReferencePrefix: "E2E-1060", loseUnprocessed: true))
        #expect(Self.transientCode(try harness.process(stage, message)) == "gateway_outcome_uncertain")
        harness.simulator.holds.release(lose)
        #expect(harness.auths("E2E-1060") == 0)
        for _ in 0..<6 where try harness.status(message) == .submitting || harness.status(message) == .prepared {
            try harness.ageAttempts(message)
            _ = try harness.process(stage, message)
        }
        let ended = try harness.authorize.payment(message.paymentId)
        #expect(ended?.status == .authorized, "\(ended?.errorCode ?? "-"): \(ended?.errorMessage ?? "-")")
        #expect(harness.auths("E2E-1060") == 1)
        let database = try harness.authorize.database()
        defer { database.close() }
        let outcomes = try database.query("SELECT string_agg(request_type || ':' || coalesce(outcome, ''), ',' ORDER BY id) AS o FROM gateway_attempts WHERE payment_id = $1",
                                          [message.paymentId]).first?.decode("o", as: String?.self)
        #expect(outcomes?.contains(":not_found") == true, "the resend followed OPP's \"not found\": \(outcomes ?? "-")")
        #expect(outcomes?.hasSuffix(":authorized") == true, "\(outcomes ?? "-")")
    }

    /// Issue 40, defect 2: a TapPay merchant's document without `identities` (TapPay decrypts; PayPipe holds no Apple
    /// identity for it), applied as `paypipe merchant apply` reads it, authorises a prime.
    @Test func tapPayMerchantWithoutIdentitiesAuthorisesAPrime() throws {
        let harness = try Harness()
        let json = #"{"id":"tappay-noid","gateway":{"type":"tappay","baseUrl":"\#(harness.simulator.baseURL)","mode":"gateway-decrypts","tapPay":{"merchantId":"tappay_e2e","partnerKey":"partner_e2e"}}}"#
        let document = try JSONDecoder().decode(MerchantDocument.self, from: Data(json.utf8))
        do {
            let database = try harness.authorize.database()
            defer { database.close() }
            try MerchantStore(vault: harness.authorize.vault).apply(document, baseDirectory: nil, deployment: .sandbox, on: database)
        }
        let message = try harness.prepared("tappay-noid", amount: 100_000, currency: "TWD", data: Self.tapPayData())
        #expect(try harness.process(harness.stage(), message) == .success(.handOff(to: .notify, message)))
        #expect(try harness.status(message) == .authorized)
        #expect(try harness.authorize.merchant("tappay-noid")?.config.identities.isEmpty == true)
    }

    @Test func tapPayAuthorisesDeclinesAndReconcilesALostAnswer() throws {
        let harness = try Harness()
        let stage = harness.stage()
        let authorised = try harness.prepared("tappay-m", amount: 100_000, currency: "TWD", data: Self.tapPayData())
        #expect(try harness.process(stage, authorised) == .success(.handOff(to: .notify, authorised)))
        #expect(try harness.status(authorised) == .authorized)
        // A bank decline is read from the Record API.
        let declined = try harness.prepared("tappay-m", amount: 105_100, currency: "TWD", data: Self.tapPayData())
        #expect(Self.transientCode(try harness.process(stage, declined)) == "gateway_outcome_uncertain")
        try harness.ageAttempts(declined)
        _ = try harness.process(stage, declined)
        #expect(try harness.status(declined) == .declined)
        let lost = try harness.prepared("tappay-m", amount: 109_600, currency: "TWD", data: Self.tapPayData())
        #expect(Self.transientCode(try harness.process(stage, lost)) == "gateway_outcome_uncertain")
        try harness.ageAttempts(lost)
        #expect(try harness.process(stage, lost) == .success(.handOff(to: .notify, lost)))
        #expect(try harness.status(lost) == .authorized)
        #expect(harness.auths("E2E-109600") == 1)
        // An amount TapPay cannot express never becomes a request.
        let (unrepresentable, outcome) = try harness.authorizing("tappay-m", amount: 100_050, currency: "TWD", data: Self.tapPayData())
        #expect(outcome == .success(.handOff(to: .notify, unrepresentable)))
        let failed = try #require(try harness.authorize.payment(unrepresentable.paymentId))
        #expect(failed.status == .failed)
        #expect(failed.errorCode == "amount_not_representable")
    }
}
}
