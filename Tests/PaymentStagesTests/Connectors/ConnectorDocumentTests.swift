import Foundation
import JWT
@testable import PaymentStages
import Pipeline
import Testing

/// Which connector a merchant document picks, what `paypipe merchant apply` refuses per connector, and that the
/// connectors' secrets travel in the sealed secrets only.
@Suite struct ConnectorDocumentTests {
    static func decode(_ json: String) throws -> MerchantDocument.Gateway {
        try JSONDecoder().decode(MerchantDocument.Gateway.self, from: Data(json.utf8))
    }

    @Test("gateway.type picks the connector", arguments: [
        ("trustpayments", ConnectorKind.trustPayments), ("Secure-Trading", .trustPayments), ("opp", .opp), ("ACI", .opp), ("tappay", .tapPay),
        ("Tap_Pay", .tapPay),
    ])
    func kinds(type: String, kind: ConnectorKind) {
        #expect(ConnectorKind(gatewayType: type) == kind)
    }

    @Test func existingTrustPaymentsDocumentsDecodeAsBefore() throws {
        let gateway = try Self.decode(#"{"type":"trustpayments","baseUrl":"https://webservices.securetrading.net","siteReference":"test_site1","jwtUsername":"u","jwtSecret":"s","mode":"merchant-decrypts"}"#)
        #expect(gateway.connector == .trustPayments)
        #expect(gateway.siteReference == "test_site1")
        #expect(ConnectorDocument.problem(gateway) == nil)
        #expect(throws: DecodingError.self) { try Self.decode(#"{"type":"trustpayments","baseUrl":"https://x","mode":"merchant-decrypts"}"#) }
    }

    @Test func oppDocument() throws {
        let gateway = try Self.decode(#"{"type":"opp","baseUrl":"https://eu-test.oppwa.com","mode":"merchant-decrypts","opp":{"entityId":"8a8294174b7ecb28014b9699220015ca","accessToken":"OGE4Mjk0","paymentBrand":"MASTER","paymentType":"PA"}}"#)
        #expect(gateway.connector == .opp)
        #expect(gateway.siteReference == "8a8294174b7ecb28014b9699220015ca")
        #expect(ConnectorDocument.problem(gateway) == nil)
        #expect(MerchantDocument(id: "m", appleMerchantIdentifier: nil, identities: [], gateway: gateway, webhook: nil).containsInlineSecrets)
    }

    /// Issue 40, defect 2: a TapPay merchant holds no Apple identity (TapPay decrypts with the certificate registered
    /// there), so its document may leave `identities` out; where PayPipe decrypts, leaving it out is still refused.
    @Test func identitiesMayBeLeftOutOnlyWhereTheProcessorDecrypts() throws {
        let tapPay = #"{"id":"tp-1","gateway":{"type":"tappay","baseUrl":"https://sandbox.tappaysdk.com","mode":"gateway-decrypts","tapPay":{"merchantId":"m_CTBC","partnerKey":"partner_x"}}}"#
        let document = try JSONDecoder().decode(MerchantDocument.self, from: Data(tapPay.utf8))
        #expect(document.identities.isEmpty)
        #expect(document.gateway?.connector == .tapPay)
        let decrypting = [
            #"{"id":"opp-1","gateway":{"type":"opp","baseUrl":"https://eu-test.oppwa.com","mode":"merchant-decrypts","opp":{"entityId":"e1","accessToken":"t"}}}"#,
            #"{"id":"none-1"}"#,
        ]
        for json in decrypting {
            #expect(throws: DecodingError.self, "\(json)") { try JSONDecoder().decode(MerchantDocument.self, from: Data(json.utf8)) }
        }
    }

    @Test func tapPayDocument() throws {
        let gateway = try Self.decode(#"{"type":"tappay","baseUrl":"https://sandbox.tappaysdk.com","mode":"gateway-decrypts","tapPay":{"merchantId":"example_merchant_CTBC","partnerKey":"partner_xxx","delayCaptureInDays":-1}}"#)
        #expect(gateway.connector == .tapPay)
        #expect(ConnectorDocument.problem(gateway) == nil)
    }

    @Test("documents apply refuses", arguments: [
        // OPP without its settings, token or a valid brand/type; with another connector's credentials; a site that is not the entity.
        #"{"type":"opp","baseUrl":"https://x","siteReference":"e1","mode":"gateway-decrypts"}"#,
        #"{"type":"opp","baseUrl":"https://x","mode":"gateway-decrypts","opp":{"entityId":"e1"}}"#,
        #"{"type":"opp","baseUrl":"https://x","mode":"merchant-decrypts","opp":{"entityId":"e1","accessToken":"t","paymentBrand":"APPLEPAYTKN"}}"#,
        #"{"type":"opp","baseUrl":"https://x","mode":"gateway-decrypts","opp":{"entityId":"e1","accessToken":"t","paymentType":"RF"}}"#,
        #"{"type":"opp","baseUrl":"https://x","mode":"gateway-decrypts","jwtSecret":"s","opp":{"entityId":"e1","accessToken":"t"}}"#,
        #"{"type":"opp","baseUrl":"https://x","siteReference":"e2","mode":"gateway-decrypts","opp":{"entityId":"e1","accessToken":"t"}}"#,
        // TapPay: merchant-decrypts (primes only), no partner key, too long a key, delay out of range.
        #"{"type":"tappay","baseUrl":"https://x","mode":"merchant-decrypts","tapPay":{"merchantId":"m","partnerKey":"k"}}"#,
        #"{"type":"tappay","baseUrl":"https://x","mode":"gateway-decrypts","tapPay":{"merchantId":"m"}}"#,
        #"{"type":"tappay","baseUrl":"https://x","mode":"gateway-decrypts","tapPay":{"merchantId":"m","partnerKey":"\#(String(repeating: "k", count: 65))"}}"#,
        #"{"type":"tappay","baseUrl":"https://x","mode":"gateway-decrypts","tapPay":{"merchantId":"m","partnerKey":"k","delayCaptureInDays":-2}}"#,
        // Trust Payments: another connector's settings; the webservices transport without its user.
        #"{"type":"trustpayments","baseUrl":"https://x","siteReference":"s","mode":"gateway-decrypts","transport":"jwt","jwtUsername":"u","jwtSecret":"s","opp":{"entityId":"e1"}}"#,
        #"{"type":"trustpayments","baseUrl":"https://x","siteReference":"s","mode":"gateway-decrypts","webservicesPassword":"p"}"#,
        // An unknown type is judged by Trust Payments' rules, as before connectors.
        #"{"type":"stripe","baseUrl":"https://x","siteReference":"s","mode":"gateway-decrypts","webservicesPassword":"p"}"#,
    ])
    func refused(json: String) throws {
        #expect(ConnectorDocument.problem(try Self.decode(json)) != nil, "\(json)")
    }

    @Test func endpointsPerConnector() throws {
        var opp = MerchantConfig.Gateway(type: "opp", baseUrl: "https://eu-test.oppwa.com/", siteReference: "e1", jwtUsername: nil, mode: .gatewayDecrypts,
                                         requestTypes: ["AUTH"])
        opp.opp = OPPSettings(entityId: "e1")
        var secrets = MerchantSecrets(privateKeys: [], jwtSecret: nil, webhookSecrets: [])
        secrets.oppAccessToken = "token"
        let endpoint = try GatewayEndpoint.forMerchant(opp, secrets: secrets, site: nil).get()
        #expect(endpoint.connector == .opp)
        #expect(endpoint.url == "https://eu-test.oppwa.com/v1/payments")
        #expect(endpoint.siteReference == "e1")
        #expect(try GatewayEndpoint.forMerchant(opp, secrets: secrets, site: "e-old").get().siteReference == "e-old")
        #expect(throws: ConnectorBuildError.self) {
            try GatewayEndpoint.forMerchant(opp, secrets: MerchantSecrets(privateKeys: [], jwtSecret: "s", webhookSecrets: []), site: nil).get()
        }
        #expect(!"\(secrets)".contains("token"))
        #expect(!"\(endpoint)".contains("token"))
    }

    @Test func capabilitiesTable() {
        #expect(ConnectorKind.opp.capabilities.reconciliationKey == "merchantTransactionId")
        #expect(ConnectorKind.tapPay.capabilities.reconciliationKey == "bank_transaction_id")
        #expect(ConnectorKind.trustPayments.capabilities.reconciliationKey == "orderreference")
        #expect(ConnectorKind.tapPay.capabilities.capture == .full)
        #expect(!ConnectorKind.tapPay.capabilities.void)
        #expect(ConnectorKind.tapPay.capabilities.modes == [.gatewayDecrypts])
    }
}
