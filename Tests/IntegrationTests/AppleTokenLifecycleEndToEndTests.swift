import Foundation
import HTTP
import JSON
@testable import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
/// Issue #44's "Done when" for Apple's merchant-token lifecycle, on Trust Payments and on OPP, on the real database,
/// the gateway simulator's faces and the real `paypipe-apple-notifications` executable: a CIT that stores, two MITs
/// charged; Apple scripts an UNLINK on the simulator's Apple face and sends its notification GET; the operations
/// worker's upkeep round pulls the event over mutual TLS (the merchant's identity, an `x-request-id`) and applies it;
/// `credential.unlinked` is recorded for the merchant and published by notify; the next MIT is refused
/// `credential_unlinked` with no call to the processor (the simulator's ledger is unchanged).
@Suite struct AppleTokenLifecycleEndToEndTests {
    static let appleMerchantId = "merchant.com.example"
    static let token = "DNITHE000000000000000001"

    @Test(arguments: [("tp-m", Int64(8050)), ("opp-m", Int64(9050))])
    func appleUnlinksThroughItsNotificationAndTheNextMITIsRefusedWithoutACall(_ merchant: String, _ amount: Int64) throws {
        let files = try MutualTLSFiles()
        defer { files.remove() }
        let harness = try ConnectorEndToEndTests.Harness(appleTokenAPI: AppleTokenAPIFace(port: 0, files: files.server))
        let face = try #require(harness.simulator.appleTokenAPI)
        let stage = harness.stage()

        let cit = try harness.storing(merchant, amount: amount, usage: .recurring)
        #expect(try harness.pay(stage, cit) == .success(.handOff(to: .notify, cit)))
        let credential = try #require(try harness.credential(of: cit)).credential
        #expect(credential.state == .active && credential.merchantTokenIdentifier == Self.token)
        for offset: Int64 in [10, 20] {
            let mit = try harness.merchantInitiated(merchant, amount: amount + offset, credentialId: credential.id, reason: .recurring)
            #expect(try harness.pay(stage, mit) == .success(.handOff(to: .notify, mit)))
            #expect(try harness.status(mit) == .authorized)
        }

        // Apple's side: the event, scripted on the simulator's admin path, then its notification GET.
        let eventId = "evt-\(merchant)-\(UUID().uuidString.prefix(8))"
        let admin = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 10))
        let script: JSONValue = [
            "merchantId": .string(Self.appleMerchantId), "eventId": .string(eventId),
            "event": ["eventType": "UNLINK", "merchantTokenIdentifier": .string(Self.token), "reason": "USER"],
        ]
        #expect(try admin.send(HTTPRequest(method: "POST", url: "\(harness.simulator.baseURL)/_sim/apple/events",
                                           headers: [HTTPHeader(name: "Content-Type", value: "application/json")], body: script.serialized())).status == 204)
        let (notifications, ports) = try AppleNotificationTests.executable(databaseURL: harness.authorize.databaseURL)
        defer {
            notifications.signal(SIGTERM)
            _ = notifications.wait(timeout: 20)
        }
        #expect(try admin.send(HTTPRequest(url: "http://127.0.0.1:\(ports[0])/\(merchant)/notification/merchantToken/\(eventId)")).status == 200)

        // The operations worker's upkeep round (the same function its thread runs): pull over mutual TLS, apply.
        let identity = AppleTokenAPIIdentity(appleMerchantId: Self.appleMerchantId, certificatePath: files.clientCertificate, keyPath: files.clientKey)
        let upkeep = MerchantTokenUpkeep(
            puller: MerchantTokenEventPuller(baseURL: face.baseURL, identity: { $0 == merchant ? identity : nil }, caCertificatePath: files.caCertificate, timeout: 10),
            applier: MerchantTokenEventApplier(credentials: CredentialStore(vault: harness.authorize.vault)))
        let database = try harness.authorize.database()
        defer { database.close() }
        try upkeep.run(database: database, logger: Logger(component: "operations-test", threshold: .error))
        #expect(face.calls.map(\.path) == ["/paymentservices/v1/merchantId/\(Self.appleMerchantId)/merchantToken/event/\(eventId)"])
        #expect(face.calls.allSatisfy { !$0.requestId.isEmpty })
        let row = try #require(try MerchantTokenEventStore().list(on: database).first { $0.eventId == eventId })
        #expect(row.state == "applied" && row.merchantId == merchant, "\(row)")
        #expect(try CredentialStore(vault: harness.authorize.vault).find(credential.id, merchantId: merchant, on: database)?.state == .unlinked)
        let events = try CredentialEventStore().events(credentialId: credential.id, on: database)
        #expect(events.map(\.type.rawValue) == ["credential.unlinked"] && events.allSatisfy { $0.merchantId == merchant })
        // The merchant is told: the notify worker's relay hands the event to notify, which publishes it on the results
        // exchange correlated by the credential (this merchant has no webhook URL; CredentialEventTests signs one).
        let notify = NotifyStage(directory: MerchantDirectory(store: MerchantStore(vault: harness.authorize.vault), ttl: 0),
                                 urlGuard: WebhookURLGuard(allowPrivate: true), retrySchedule: harness.authorize.configuration.retrySchedule,
                                 logger: Logger(component: "notify-test", threshold: .error))
        let handOffs = try CredentialEventTests.handedOff(notify, on: database)
        #expect(handOffs.count == 1)
        guard case .success(.publish(let published)) = try #require(notify.process(handOffs, database: database).first) else {
            Issue.record("credential.unlinked not published"); return
        }
        #expect(published.map(\.rendered.routingKey) == ["credential.unlinked"])
        #expect(published.first?.rendered.properties.correlationId == credential.id)
        #expect(try CredentialEventStore().events(credentialId: credential.id, on: database).map(\.notified) == [true])

        // The next MIT: refused before any call, the processor's ledger unchanged.
        let before = harness.simulator.ledger.totalAuths
        let captured = harness.simulator.ledger.captured.count
        let refused = try harness.merchantInitiated(merchant, amount: amount + 30, credentialId: credential.id, reason: .recurring)
        #expect(harness.authorize.makeStage().process([refused], database: database)[0] == .success(.handOff(to: .notify, refused)))
        let failed = try #require(try harness.authorize.payment(refused.paymentId))
        #expect(failed.status == .failed && failed.errorCode == "credential_unlinked")
        #expect(harness.simulator.ledger.totalAuths == before && harness.simulator.ledger.captured.count == captured, "no gateway call")
        #expect(try database.query("SELECT count(*) AS n FROM gateway_requests WHERE payment_id = $1", [refused.paymentId])[0].decode("n", as: Int64.self) == 0)
    }
}
}
