import Foundation
import PaymentDomain
import PaymentStages
import PayPipeDevTools
import Testing

/// `paypipe sandbox init --gateway-url/--webhook-url` on an existing sandbox: a stack on other ports (PAYPIPE_PORT_BASE)
/// reusing the directory must get its own simulator and receiver URLs, with the document's secrets kept.
@Suite struct SandboxEnvironmentTests {
    static func document(_ directory: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/merchant.json"))) as? [String: Any] ?? [:]
    }

    @Test func explicitURLsReplaceThoseOfAnExistingDocumentAndKeepItsSecrets() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try SandboxEnvironment.open(directory: directory)
        let first = try Self.document(directory)
        let firstGateway = first["gateway"] as? [String: Any], firstWebhook = first["webhook"] as? [String: Any]
        #expect(firstGateway?["baseUrl"] as? String == "http://127.0.0.1:9180")

        _ = try SandboxEnvironment.open(directory: directory, endpoints: .init(
            gatewayURL: "http://127.0.0.1:18480", webhookURL: "http://127.0.0.1:18490/webhooks"))
        let second = try Self.document(directory)
        let gateway = second["gateway"] as? [String: Any], webhook = second["webhook"] as? [String: Any]
        #expect(gateway?["baseUrl"] as? String == "http://127.0.0.1:18480")
        #expect(webhook?["url"] as? String == "http://127.0.0.1:18490/webhooks")
        #expect(gateway?["jwtSecret"] as? String == firstGateway?["jwtSecret"] as? String)
        #expect(webhook?["secret"] as? String == firstWebhook?["secret"] as? String)

        // Without URLs, a later open leaves the document as it is.
        _ = try SandboxEnvironment.open(directory: directory)
        #expect((try Self.document(directory)["gateway"] as? [String: Any])?["baseUrl"] as? String == "http://127.0.0.1:18480")
    }

    /// A sandbox made before the `webservices` transport has a `jwt` merchant.json as user jwt@paypipe.sandbox. The
    /// jwt twin must not name that user with another secret: the simulator keeps one secret per user, and every
    /// answer to the other merchant failed verification (adversarial checks: needs_review, reconciliation_inconclusive).
    @Test func theJWTTwinOfAPreexistingJWTMerchantSharesItsSecret() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try SandboxEnvironment.open(directory: directory)
        var old = try Self.document(directory)
        var gateway = old["gateway"] as? [String: Any] ?? [:]
        for key in ["transport", "webservicesUsername", "webservicesPassword"] { gateway[key] = nil }
        gateway["jwtUsername"] = "jwt@paypipe.sandbox"
        gateway["jwtSecret"] = "sandbox-the-old-secret"
        old["gateway"] = gateway
        try JSONSerialization.data(withJSONObject: old).write(to: URL(fileURLWithPath: directory + "/merchant.json"))
        // As an earlier init wrote it: the same user, a fresh secret.
        var twin = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/merchant-jwt.json"))) as? [String: Any] ?? [:]
        var twinGateway = twin["gateway"] as? [String: Any] ?? [:]
        twinGateway["jwtSecret"] = "sandbox-another-secret"
        twin["gateway"] = twinGateway
        try JSONSerialization.data(withJSONObject: twin).write(to: URL(fileURLWithPath: directory + "/merchant-jwt.json"))

        _ = try SandboxEnvironment.open(directory: directory)
        let written = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/merchant-jwt.json"))) as? [String: Any]
        let writtenGateway = written?["gateway"] as? [String: Any]
        #expect(writtenGateway?["jwtUsername"] as? String == "jwt@paypipe.sandbox")
        #expect(writtenGateway?["jwtSecret"] as? String == "sandbox-the-old-secret")
        let services = try String(contentsOfFile: directory + "/services.env", encoding: .utf8)
        #expect(services.contains("PAYPIPE_SIM_MERCHANTS='jwt@paypipe.sandbox=sandbox-the-old-secret'\n"))
    }

    /// `sandbox init` writes one merchant per connector, each a document `merchant apply` accepts, and names their
    /// simulator accounts in services.env; reopening keeps their secrets and repoints them with explicit URLs.
    @Test func itWritesAnOPPAndATapPayMerchantTheSimulatorKnows() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sandbox = try SandboxEnvironment.open(directory: directory)
        func read(_ path: String) throws -> MerchantDocument { try JSONDecoder().decode(MerchantDocument.self, from: Data(contentsOf: URL(fileURLWithPath: path))) }
        let opp = try read(sandbox.oppMerchantDocumentPath), tapPay = try read(sandbox.tapPayMerchantDocumentPath)
        #expect(opp.id == SandboxEnvironment.oppMerchantId && opp.gateway?.connector == .opp)
        #expect(tapPay.id == SandboxEnvironment.tapPayMerchantId && tapPay.gateway?.connector == .tapPay)
        #expect(ConnectorDocument.problem(try #require(opp.gateway)) == nil)
        #expect(ConnectorDocument.problem(try #require(tapPay.gateway)) == nil)
        #expect(opp.webhook == (try read(sandbox.merchantDocumentPath)).webhook)
        let token = try #require(opp.gateway?.opp?.accessToken), key = try #require(tapPay.gateway?.tapPay?.partnerKey)
        let services = try String(contentsOfFile: directory + "/services.env", encoding: .utf8)
        #expect(services.contains("PAYPIPE_SIM_OPP_TOKENS='\(token)=\(SandboxEnvironment.oppEntityId)'\n"))
        #expect(services.contains("PAYPIPE_SIM_TAPPAY_PARTNERS='\(key)=\(SandboxEnvironment.tapPayMerchantAccount)'\n"))

        let reopened = try SandboxEnvironment.open(directory: directory, endpoints: .init(gatewayURL: "http://127.0.0.1:18480"))
        let again = try read(reopened.tapPayMerchantDocumentPath)
        #expect(again.gateway?.baseUrl == "http://127.0.0.1:18480")
        #expect(again.gateway?.tapPay?.partnerKey == key)
        #expect(try read(reopened.oppMerchantDocumentPath).gateway?.opp?.accessToken == token)
    }

    /// TapPay sample jobs carry a fresh prime and no token, in amounts TapPay can express (TWD whole dollars) except the
    /// one meant to fail; a replay repeats its original's prime.
    @Test func tapPaySamplesCarryFreshPrimes() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let now = Date()
        let samples = try SampleJobFactory(environment: try SandboxEnvironment.open(directory: directory), merchantId: SandboxEnvironment.tapPayMerchantId)
            .makeJobs(count: 10, prefix: "t", now: now)
        let bodies = try samples.map { try #require(try JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any]) }
        let primes = bodies.map { $0["tapPayPrime"] as? String }
        #expect(primes.allSatisfy { $0?.hasPrefix("sim_\(Int64(now.timeIntervalSince1970 * 1000))_") == true })
        #expect(bodies.allSatisfy { $0["applePayToken"] == nil })
        #expect(samples.map(\.kind) == [.valid, .valid, .valid, .valid, .declined, .valid, .valid, .amountNotRepresentable, .invalidJob, .replayedToken])
        #expect(Set(primes).count == 9 && primes[9] == primes[5])
        // Every job but the invalid one (no orderReference) is one the contract accepts.
        let jobs = try samples.filter { $0.kind != .invalidJob }.map { try PaymentJob.decode($0.body) }
        #expect(jobs.allSatisfy { $0.tapPayPrime != nil && $0.merchantId == SandboxEnvironment.tapPayMerchantId })
        for (sample, job) in zip(samples.filter { $0.kind != .invalidJob }, jobs) where job.amount.currency.code == "TWD" {
            #expect((job.amount.value % 100 == 0) == (sample.kind != .amountNotRepresentable), "\(sample.kind) \(job.amount.value)")
        }
        #expect(samples.allSatisfy { $0.cardSecrets == nil })
        let opp = try SampleJobFactory(environment: try SandboxEnvironment.open(directory: directory), merchantId: SandboxEnvironment.oppMerchantId)
            .makeJobs(count: 8, prefix: "o", now: now).filter { $0.kind != .invalidJob }.map { try PaymentJob.decode($0.body) }
        #expect(opp.allSatisfy { $0.amount.currency.code != "JPY" && $0.tapPayPrime == nil })
    }
}
