import Foundation
import JWT
@testable import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
/// `gateway.transport` through `paypipe merchant apply` (``MerchantStore``) against PostgreSQL: the Webservices
/// password is sealed with the other secrets, a document without the field stays `jwt`, and a `webservices` one
/// without its user is refused.
@Suite struct MerchantTransportTests {
    @Test func transportsAreStoredAndTheWebservicesPasswordIsSealed() throws {
        try TestServices.resetDatabase()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("transport-doc-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sandbox = try SandboxEnvironment.open(directory: directory)
        let vault = DataVault(keyring: try DataKeyring.load(EnvironmentReader(["PAYPIPE_DATA_KEY_FILE": sandbox.dataKeyPath]), deployment: .sandbox))
        let database = try TestServices.database()
        defer { database.close() }
        let store = MerchantStore(vault: vault)
        let base = URL(fileURLWithPath: directory)

        let webservices = sandbox.merchantDocument()
        let password = try #require(webservices.gateway?.webservicesPassword)
        let applied = try store.apply(webservices, baseDirectory: base, deployment: .sandbox, on: database)
        #expect(applied.config.gateway?.resolvedTransport == .webservices)
        #expect(applied.config.gateway?.username == "ws@paypipe.sandbox")
        #expect(applied.secrets.webservicesPassword == password)
        let row = try #require(try database.query("SELECT config::text AS config, secrets_ciphertext FROM merchants WHERE id = $1", [webservices.id]).first)
        #expect(try !row.decode("config", as: String.self).contains(password), "the password is not in the plain config")
        #expect(try row.decode("secrets_ciphertext", as: [UInt8].self).firstRange(of: Array(password.utf8)) == nil, "sealed")
        #expect(!"\(applied.secrets)".contains(password))

        // A document written before `transport` existed (jwtUsername + jwtSecret, no field) stays jwt.
        var legacy = sandbox.jwtMerchantDocument(from: webservices)
        legacy.id = "legacy-jwt"
        legacy.gateway?.transport = nil
        #expect(legacy.gateway?.resolvedTransport == .jwt)
        let old = try store.apply(legacy, baseDirectory: base, deployment: .sandbox, on: database)
        #expect(old.config.gateway?.resolvedTransport == .jwt)
        #expect(old.secrets.gatewaySecret(for: .jwt) == legacy.gateway?.jwtSecret)
        // A row applied before the field existed (no `transport` in its config) reads as jwt.
        try database.query("UPDATE merchants SET config = config #- '{gateway,transport}' WHERE id = 'legacy-jwt'")
        #expect(try store.load("legacy-jwt", on: database)?.config.gateway?.resolvedTransport == .jwt)

        var missing = webservices
        missing.id = "no-ws-user"
        missing.gateway?.webservicesUsername = nil
        let error = #expect(throws: MerchantStore.MerchantError.self) { try store.apply(missing, baseDirectory: base, deployment: .sandbox, on: database) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("webservicesUsername"))
        missing.gateway?.webservicesUsername = "ws"
        missing.gateway?.webservicesPassword = nil
        #expect(throws: MerchantStore.MerchantError.self) { try store.apply(missing, baseDirectory: base, deployment: .sandbox, on: database) }
    }
}
}
