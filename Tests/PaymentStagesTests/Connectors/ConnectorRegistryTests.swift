import Foundation
import HTTP
import JWT
@testable import PaymentStages
import Pipeline
import Testing

/// The registry is the one list of connectors: every id and alias resolves to its row, no alias is claimed twice,
/// the capabilities are the documented table, and each row's plug-in is the connector it names.
@Suite struct ConnectorRegistryTests {
    @Test func everyKindHasOneRowAndItsPlugInIsThatKind() {
        #expect(ConnectorRegistry.all.map(\.kind) == ConnectorKind.allCases)
        for registration in ConnectorRegistry.all {
            #expect(registration.plugin.kind == registration.kind)
            #expect(registration.aliases.contains(registration.kind.rawValue), "the id \(registration.kind.rawValue) is one of its aliases")
        }
    }

    @Test func everyAliasResolvesWrittenAnyWayTheDocumentsAllow() {
        var seen: Set<String> = []
        for registration in ConnectorRegistry.all {
            for alias in registration.aliases {
                #expect(alias == ConnectorRegistry.normalized(alias), "aliases are stored normalised")
                #expect(seen.insert(alias).inserted, "\(alias) is claimed once")
                #expect(ConnectorKind(gatewayType: alias) == registration.kind)
                #expect(ConnectorKind(gatewayType: alias.uppercased()) == registration.kind)
                let spelt = alias.enumerated().map { $0.offset == 1 ? "-\($0.element)" : "\($0.element)" }.joined() + "_"
                #expect(ConnectorKind(gatewayType: spelt) == registration.kind, "\(spelt)")
            }
        }
        // Exactly the `gateway.type` values documented before the registry (docs/merchant-config.md).
        #expect(seen == ["trustpayments", "securetrading", "opp", "aci", "acioppwa", "oppwa", "tappay"])
        for unknown in ["", "stripe", "trust payments", "opp1", "tap.pay"] {
            #expect(ConnectorKind(gatewayType: unknown) == nil, "\(unknown)")
        }
    }

    /// The request names operations store are what the connectors declare: the names stored before stay, each fits the
    /// database's shape (``StoredRequestName``, migration 25), and a status query is told from a request by the names
    /// alone, whichever connector's attempts are read.
    @Test func storedRequestNamesAreTheConnectorsDeclaredNames() {
        #expect(ConnectorRegistry.queryRequestNames == ["TRANSACTIONQUERY", "QUERY"])
        #expect(ConnectorRegistry.requestNames.isSuperset(of: ["TRANSACTIONUPDATE", "REFUND", "TRANSACTIONQUERY", "CAPTURE", "REVERSAL", "QUERY"]))
        for name in ConnectorRegistry.requestNames {
            #expect(StoredRequestName.fits(name), "\(name) fits the stored shape")
        }
        for registration in ConnectorRegistry.all {
            #expect(!registration.plugin.operationTransports.isEmpty, "\(registration.kind.rawValue) declares its operation transports")
            for transport in registration.plugin.operationTransports {
                let names = transport.requestNames
                #expect(OperationSteps.isQuery(names.query))
                for request in [names.capture, names.void, names.lowerCapture, names.hold, names.refund] {
                    #expect(!OperationSteps.isQuery(request), "\(request) of \(transport.name) is not read as a status query")
                }
            }
        }
        // A merchant without gateway settings is judged as before: by the fallback connector's first transport.
        #expect(ConnectorRegistry.fallbackOperationTransport == .webservices)
    }

    /// Submit stores every connector's AUTH status query under the one request type existing `gateway_attempts` rows
    /// hold, and tells queries from AUTH attempts by it: the value read through the registry is that stored value.
    @Test func authStatusQueriesKeepTheirStoredRequestType() {
        #expect(ConnectorRegistry.authStatusQueryRequestType == "TRANSACTIONQUERY")
        #expect(GatewayAttemptStore.queryRequestType == ConnectorRegistry.authStatusQueryRequestType)
        #expect(StoredRequestName.fits(GatewayAttemptStore.queryRequestType))
    }

    @Test func theStoredRequestNameShape() {
        for name in ["AUTH", "TRANSACTIONQUERY", "lower_capture", "A", "x9_", String(repeating: "N", count: StoredRequestName.maxLength)] {
            #expect(StoredRequestName.fits(name), "\(name)")
        }
        for name in ["", "9A", "_A", "A B", "A-B", "A'B", "É", String(repeating: "N", count: StoredRequestName.maxLength + 1)] {
            #expect(!StoredRequestName.fits(name), "\(name)")
        }
    }

    @Test func capabilitiesTable() {
        let table = Dictionary(uniqueKeysWithValues: ConnectorKind.allCases.map { ($0, $0.capabilities) })
        #expect(table[.trustPayments] == ConnectorCapabilities(
            modes: [.merchantDecrypts, .gatewayDecrypts], capture: .partial, void: true, refund: .partial, manualCapture: true,
            reconciliationKey: "orderreference"))
        #expect(table[.opp] == ConnectorCapabilities(
            modes: [.merchantDecrypts, .gatewayDecrypts], capture: .partial, void: true, refund: .partial, manualCapture: true,
            reconciliationKey: "merchantTransactionId"))
        // TapPay's Apple Pay deferred payment: the prime lives 30 days [doc].
        #expect(table[.tapPay] == ConnectorCapabilities(
            modes: [.gatewayDecrypts], capture: .full, void: false, refund: .partial, manualCapture: true, deferredAmount: true,
            deferredAmountLifetime: 30 * 86_400, reconciliationKey: "bank_transaction_id"))
        #expect(ConnectorKind.allCases.allSatisfy { !$0.capabilities.storedCredentials })
        #expect(TapPayConnector.capabilities == table[.tapPay], "a connector's capabilities are its registry row")
    }

    /// A submit attempt is reconciled after the longest call it may have made: the pool's (`PAYPIPE_GATEWAY_TIMEOUT`) or
    /// a connector's own transport's (Trust Payments' `webservices`, `PAYPIPE_WEBSERVICES_TIMEOUT`), asked of the plug-ins.
    @Test func theReconciliationTimeWaitsForTheLongestCall() throws {
        #expect(try ConnectorRegistry.longestOwnTimeout(EnvironmentReader([:])) == 60)
        #expect(try TrustPaymentsClient.ownCallTimeout(EnvironmentReader(["PAYPIPE_WEBSERVICES_TIMEOUT": "45"])) == 45)
        #expect(try OPPConnector.ownCallTimeout(EnvironmentReader([:])) == nil && TapPayConnector.ownCallTimeout(EnvironmentReader([:])) == nil)
        // send window 5 + the longer timeout + grace 30.
        #expect(try SubmitStage.reconciliationSeconds(EnvironmentReader(["PAYPIPE_WEBSERVICES_TIMEOUT": "100"])) == 135)
        #expect(try SubmitStage.reconciliationSeconds(EnvironmentReader(["PAYPIPE_WEBSERVICES_TIMEOUT": "10", "PAYPIPE_GATEWAY_TIMEOUT": "50"])) == 85)
        #expect(throws: ConfigurationError.self) { try ConnectorRegistry.longestOwnTimeout(EnvironmentReader(["PAYPIPE_WEBSERVICES_TIMEOUT": "x"])) }
    }

    /// Every connector that declares manual capture holds a manual AUTH its own way (``ConnectorPlugin/holdForCapture``):
    /// its stored request changes, and an automatic one never does.
    @Test func everyManualCaptureConnectorHoldsAManualAuth() {
        let request = GatewayRequest(orderReference: "O-1", requestTypes: ["AUTH"], claims: ["payload": ["amount": "1"]])
        for kind in ConnectorKind.allCases where kind.capabilities.manualCapture {
            #expect(CaptureSuspension.request(request, mode: .manual, connector: kind) != request, "\(kind.rawValue)")
            #expect(CaptureSuspension.request(request, mode: .automatic, connector: kind) == request, "\(kind.rawValue)")
        }
    }

    @Test func unknownTypesAreJudgedByTheFallbackConnector() throws {
        let gateway = MerchantDocument.Gateway(type: "nobody", baseUrl: "https://x", siteReference: "s", mode: .merchantDecrypts)
        #expect(gateway.connector == ConnectorRegistry.fallback)
        #expect(ConnectorDocument.manualCaptureProblem(gateway) == "captureMode \"manual\" needs a known gateway.type (trustpayments, opp, tappay)")
    }

    @Test func aDocumentCarryingAnotherConnectorsSectionIsRefused() throws {
        let opp = OPPSettings(entityId: "8a8294174b7ecb28014b9699220015ca", accessToken: "OGE4Mjk0", paymentBrand: "MASTER", paymentType: "PA")
        let trustPayments = MerchantDocument.Gateway(type: "trustpayments", baseUrl: "https://x", siteReference: "s", jwtUsername: "u", jwtSecret: "k",
                                                     mode: .merchantDecrypts, opp: opp)
        #expect(ConnectorDocument.problem(trustPayments)?.contains("of opp") == true)
        let withSecret = MerchantDocument.Gateway(type: "opp", baseUrl: "https://x", siteReference: opp.entityId, jwtSecret: "k",
                                                  mode: .merchantDecrypts, opp: opp)
        #expect(ConnectorDocument.problem(withSecret)?.contains("of trustpayments") == true)
        let clean = MerchantDocument.Gateway(type: "opp", baseUrl: "https://x", siteReference: opp.entityId, mode: .merchantDecrypts, opp: opp)
        #expect(ConnectorDocument.problem(clean) == nil)
    }

    /// The redaction keys are every connector's, as listed before the registry.
    @Test func redactedKeysAreEveryConnectors() {
        #expect(ClaimsRedactor.sensitiveKeys == [
            "pan", "tavv", "wallettoken", "expirydate", "securitycode", "cavv", "jwt", "threedresponse",
            "card.number", "card.expirymonth", "card.expiryyear", "threedsecure.verificationid", "applepay.paymenttoken", "prime", "partner_key",
            // OPP's stored request of a merchant-initiated payment names its registration (it can charge the card).
            "registrationpath",
        ])
        #expect(ClaimsRedactor.masked(["card.number": "4111111111111111", "pan": "5555555555554444"])
            == ["card.number": "************1111", "pan": "************4444"])
    }

    @Test func theWorkerBuildsOneConnectorPerKindFromItsSettings() throws {
        let http = HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 7)
        let environment = EnvironmentReader(["PAYPIPE_WEBSERVICES_TIMEOUT": "45", "PAYPIPE_WEBSERVICES_CONNECT_TIMEOUT": "4"])
        let connectors = try ConnectorRegistry.connectors(ConnectorWorkerSettings(http: http, transport: .strict, environment: environment))
        for kind in ConnectorKind.allCases {
            #expect(connectors.connector(kind).http.totalTimeout == 7)
        }
        let endpoint = GatewayEndpoint(baseUrl: "https://x", siteReference: "s", transport: .webservices, username: "u", secret: "p")
        #expect(connectors.totalTimeout(for: endpoint) == 45, "the webservices transport's timeout comes from its variables")
        #expect(throws: ConfigurationError.self) {
            try ConnectorRegistry.connectors(ConnectorWorkerSettings(http: http, transport: .strict, environment: EnvironmentReader(["PAYPIPE_WEBSERVICES_TIMEOUT": "x"])))
        }
    }
}

/// The connector sections keep the merchant documents, `merchants.config` and the sealed secrets as they were: each
/// section under its own key beside the other fields, its secret sealed under its own name.
@Suite struct ConnectorSectionTests {
    @Test func sectionsDecodeAndEncodeUnderTheirKeys() throws {
        let json = #"{"type":"tappay","baseUrl":"https://sandbox.tappaysdk.com","mode":"gateway-decrypts","tapPay":{"merchantId":"m1","partnerKey":"partner_k"}}"#
        let gateway = try JSONDecoder().decode(MerchantDocument.Gateway.self, from: Data(json.utf8))
        #expect(gateway.tapPay == TapPaySettings(merchantId: "m1", partnerKey: "partner_k"))
        #expect(gateway.opp == nil)
        #expect(gateway.siteReference == "m1", "the section's account stands for a missing siteReference")
        let encoded = try JSONValue.parse(Array(JSONEncoder().encode(gateway)))
        #expect(encoded["tapPay"]?["merchantId"]?.stringValue == "m1")
        #expect(encoded["tapPay"]?["partnerKey"]?.stringValue == "partner_k")
        #expect(try JSONDecoder().decode(MerchantDocument.Gateway.self, from: JSONEncoder().encode(gateway)) == gateway)
        #expect(MerchantDocument(id: "m", appleMerchantIdentifier: nil, identities: [], gateway: gateway, webhook: nil).containsInlineSecrets)
    }

    @Test func configKeepsTheSectionWithoutItsSecret() throws {
        let stored = #"{"type":"opp","baseUrl":"https://x","siteReference":"e1","mode":"merchant-decrypts","requestTypes":["AUTH"],"transport":"webservices","opp":{"entityId":"e1","paymentType":"PA"}}"#
        let config = try JSONDecoder().decode(MerchantConfig.Gateway.self, from: Data(stored.utf8))
        #expect(config.opp == OPPSettings(entityId: "e1", paymentType: "PA"))
        let again = try JSONValue.parse(Array(JSONEncoder().encode(config)))
        #expect(again["opp"]?["entityId"]?.stringValue == "e1" && again["opp"]?["paymentType"]?.stringValue == "PA")
        #expect(again["transport"]?.stringValue == "webservices" && again["requestTypes"]?[0]?.stringValue == "AUTH")
        #expect(try JSONDecoder().decode(MerchantConfig.Gateway.self, from: JSONEncoder().encode(config)) == config, "a row reads and writes back as it was")
        var document = MerchantDocument.Gateway(type: "opp", baseUrl: "https://x", siteReference: "e1", mode: .merchantDecrypts,
                                                opp: OPPSettings(entityId: "e1", accessToken: "tok"))
        #expect(document.sections.withoutSecrets[OPPSettings.self]?.accessToken == nil)
        #expect(document.sections.secrets == ["oppAccessToken": "tok"])
        document.opp = nil
        #expect(document.sections.isEmpty)
    }

    /// A `merchants.config` row is written back as it was read, every field in place and no secret added: the config
    /// encodes through the document's form (one encoding of the shared fields).
    @Test func aConfigRowWritesBackAsItWasRead() throws {
        let rows = [
            #"{"type":"trustpayments","baseUrl":"https://x","siteReference":"s1","jwtUsername":"u","mode":"merchant-decrypts","requestTypes":["THREEDQUERY","AUTH"],"transport":"jwt","captureMode":"manual","captureWithin":"P7D"}"#,
            #"{"type":"securetrading","baseUrl":"https://x","siteReference":"s1","mode":"gateway-decrypts","requestTypes":["AUTH"],"transport":"webservices","webservicesUsername":"ws@x"}"#,
            #"{"type":"opp","baseUrl":"https://x","siteReference":"e1","mode":"merchant-decrypts","requestTypes":["AUTH"],"opp":{"entityId":"e1","paymentType":"PA"}}"#,
        ]
        for row in rows {
            let config = try JSONDecoder().decode(MerchantConfig.Gateway.self, from: Data(row.utf8))
            let written = try JSONSerialization.jsonObject(with: JSONEncoder().encode(config)) as? NSDictionary
            #expect(written == (try JSONSerialization.jsonObject(with: Data(row.utf8)) as? NSDictionary), "\(row)")
        }
    }

    @Test func sealedSecretsKeepTheirNames() throws {
        let older = #"{"privateKeys":[],"jwtSecret":null,"webhookSecrets":["whsec_a"],"oppAccessToken":"tok","tapPayPartnerKey":"pk"}"#
        let secrets = try JSONDecoder().decode(MerchantSecrets.self, from: Data(older.utf8))
        #expect(secrets.oppAccessToken == "tok" && secrets.tapPayPartnerKey == "pk" && secrets.webhookSecrets == ["whsec_a"])
        let written = try JSONValue.parse(Array(JSONEncoder().encode(secrets)))
        #expect(written["oppAccessToken"]?.stringValue == "tok" && written["tapPayPartnerKey"]?.stringValue == "pk")
        #expect("\(secrets)" == "MerchantSecrets(privateKeys: 0, jwtSecret: unset, webservicesPassword: unset, oppAccessToken: set, tapPayPartnerKey: set, webhookSecrets: 1)")
        #expect(try JSONDecoder().decode(MerchantSecrets.self, from: Data(#"{"privateKeys":[],"webhookSecrets":[]}"#.utf8)).connectorSecrets.isEmpty)
    }
}
