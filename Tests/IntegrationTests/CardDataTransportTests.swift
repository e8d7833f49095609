import Foundation
import HTTP
import PaymentStages
import PayPipeDevTools
import Pipeline
import Testing

extension Integration {
/// Card data travels only over verified TLS outside sandbox: `merchant apply` refuses a plain-http gateway, and the
/// gateway client refuses to send to one (a document applied before the rule existed). Only loopback is contacted.
@Suite struct CardDataTransportTests {
    /// The client as production builds it (no sandbox policy) POSTed the card data to an http:// gateway.
    @Test func theGatewayClientRefusesToSendCardDataOverPlainHTTP() throws {
        try GatewaySimulatorHTTPTests.withSimulator { simulator, endpoint in
            #expect(endpoint.jwtURL.hasPrefix("http://127.0.0.1:"))
            let production = TrustPaymentsClient(http: HTTPClientConfiguration(connectTimeout: 1, totalTimeout: 3))
            let refused = production.authorize(
                claims: GatewaySimulatorHTTPTests.claims(amount: 1000, order: "T1"), requestTypes: ["AUTH"], endpoint: endpoint,
                requestId: "1", now: Date())
            #expect(refused.outcome == .permanentError)
            #expect(refused.errorCode == "paypipe.insecure_gateway_url")
            #expect(production.queryTransaction(orderReference: "T1", endpoint: endpoint, requestId: "q", now: Date())
                    == .inconclusive(code: "paypipe.insecure_gateway_url", reason: refused.errorMessage ?? ""))
            // PAYPIPE_ALLOW_INSECURE_TRANSPORT plays no part: the policy has no such switch. Sandbox may use loopback.
            let sandbox = TrustPaymentsClient(http: HTTPClientConfiguration(connectTimeout: 1, totalTimeout: 3), transport: .init(deployment: .sandbox))
            #expect(sandbox.authorize(
                claims: GatewaySimulatorHTTPTests.claims(amount: 1000, order: "T2"), requestTypes: ["AUTH"], endpoint: endpoint,
                requestId: "2", now: Date()).outcome == .authorized)
            #expect(simulator.ledger.totalAuths == 1, "the refused call never reached the gateway")
        }
    }

    /// `paypipe merchant apply` (``MerchantStore``) outside sandbox stored an http:// gateway without complaint.
    @Test func merchantApplyRefusesAPlainHTTPGatewayOutsideSandbox() throws {
        try TestServices.resetDatabase()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("transport-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sandbox = try SandboxEnvironment.open(directory: directory, endpoints: .init(gatewayURL: "http://gateway-sim:9180"))
        let vault = DataVault(keyring: try DataKeyring.load(EnvironmentReader(["PAYPIPE_DATA_KEY_FILE": sandbox.dataKeyPath]), deployment: .sandbox))
        let database = try TestServices.database()
        defer { database.close() }
        let store = MerchantStore(vault: vault)
        let base = URL(fileURLWithPath: directory)
        var document = sandbox.merchantDocument()
        for key in document.identities.compactMap(\.privateKeyFile) {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory + "/" + key)
        }
        for (url, deployment) in [("http://gateway-sim:9180", DeploymentEnvironment.production), ("http://127.0.0.1:9180", .production),
                                  ("ftp://gateway.example", .production), ("http://gateway-sim:9180", .sandbox)] {
            document.gateway?.baseUrl = url
            let error = #expect(throws: MerchantStore.MerchantError.self, "\(url) in \(deployment)") {
                try store.apply(document, baseDirectory: base, deployment: deployment, on: database)
            }
            #expect("\(error.map { "\($0)" } ?? "")".contains("gateway.baseUrl"))
        }
        #expect(try store.listIds(on: database).isEmpty, "nothing applied")
        // Sandbox: loopback, and the hosts PAYPIPE_SANDBOX_PLAIN_HTTP_HOSTS lists (docker compose: gateway-sim).
        document.gateway?.baseUrl = "http://127.0.0.1:9180"
        try store.apply(document, baseDirectory: base, deployment: .sandbox, on: database)
        document.gateway?.baseUrl = "http://gateway-sim:9180"
        let compose = CardDataTransportPolicy.fromEnvironment(EnvironmentReader(["PAYPIPE_SANDBOX_PLAIN_HTTP_HOSTS": "gateway-sim, other"]), deployment: .sandbox)
        try store.apply(document, baseDirectory: base, deployment: .sandbox, transport: compose, on: database)
        // The sandbox list means nothing outside sandbox; https is fine everywhere.
        let listedInProduction = CardDataTransportPolicy.fromEnvironment(EnvironmentReader(["PAYPIPE_SANDBOX_PLAIN_HTTP_HOSTS": "gateway-sim"]), deployment: .production)
        #expect(throws: MerchantStore.MerchantError.self) {
            try store.apply(document, baseDirectory: base, deployment: .production, transport: listedInProduction, on: database)
        }
        document.gateway?.baseUrl = "https://webservices.securetrading.net"
        try store.apply(document, baseDirectory: base, deployment: .production, on: database)
    }
}
}
