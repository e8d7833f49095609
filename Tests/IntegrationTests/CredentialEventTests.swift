import AMQP
import Foundation
import JSON
import PaymentDomain
import PaymentStages
import Pipeline
import Postgres
import Testing

extension Integration {
/// Issue 44, item 4: "The merchant is told: webhook and results events credential.unlinked and credential.updated".
/// An Apple event applied to a stored credential records its event with the change (outbox `credential_events`);
/// the notify worker's relay hands it to notify, whose one delivery path signs and POSTs it to the merchant and
/// publishes it on `paypipe.results`, correlated by the credential's id.
@Suite struct CredentialEventTests {
    static let token = "DNITHE000000000000000001"

    /// A stored MPAN credential of `m-notify`, stored by a payment with no `notify_url` (so the merchant's webhook is
    /// the target).
    static func storedCredential(_ harness: NotifyHarness, on database: PostgresConnection) throws -> (payment: StageMessage, credential: CredentialStore.Credential) {
        let payment = try harness.insertPayment()
        let credential = try CredentialStore(vault: harness.vault).create(CredentialStore.NewCredential(
            merchantId: payment.merchantId, paymentId: payment.paymentId, connector: "trustpayments", usage: .recurring, tokenType: .merchant,
            network: "visa", last4: "1234", expiry: CardExpiry(year: 2030, month: 12), merchantTokenIdentifier: token, cardMetadata: nil,
            secrets: CredentialSecrets(references: ["parentTransactionReference": "59-9-1"])), on: database)
        return (payment, credential)
    }

    /// Apple's event as the puller leaves it (`pulled`, its answer stored), for the real applier.
    static func pulled(_ eventId: String, merchantId: String?, type: String, metadata: String? = nil, on database: PostgresConnection) throws {
        try database.query(
            """
            INSERT INTO merchant_token_events (event_id, merchant_id, state, event_type, merchant_token_identifier, reason, metadata)
            VALUES ($1, $2, 'pulled', $3, $4, 'USER', $5::jsonb)
            """, [eventId, merchantId, type, token, metadata])
    }

    /// A notify harness with the merchant's webhook answering 204 and one stored MPAN credential.
    struct Fixture {
        let harness: NotifyHarness
        let receiver: WebhookTestReceiver
        let database: PostgresConnection
        let payment: StageMessage
        let credential: CredentialStore.Credential

        init(extra: [String: String] = [:]) throws {
            harness = try NotifyHarness(extra: extra)
            do {
                receiver = try harness.appliedReceiver(answering: 204)
                database = try harness.database()
                (payment, credential) = try CredentialEventTests.storedCredential(harness, on: database)
            } catch {
                harness.tearDown()
                throw error
            }
        }

        var applier: MerchantTokenEventApplier { MerchantTokenEventApplier(credentials: CredentialStore(vault: harness.vault)) }

        /// The relay's one hand-off processed by a notify stage: what it published, and the one webhook it sent.
        func deliverOne(_ stage: NotifyStage) throws -> (published: [OutboundMessage], event: JSONValue, body: [UInt8]) {
            let message = try #require(try CredentialEventTests.handedOff(stage, on: database).first)
            guard case .success(.publish(let published)) = stage.process([message], database: database)[0] else { throw TestFailure("not published") }
            let requests = receiver.requests
            #expect(requests.count == 1 && requests.allSatisfy(\.verified), "one webhook, signed like every webhook")
            let body = try #require(requests.first?.body)
            #expect(published.first?.rendered.body == body, "the results event carries the webhook's bytes")
            // The contract: docs/schemas/credential-event.schema.json (Draft 2020-12, as scripts/check-schemas checks jobs).
            let file = try ContractTests.temporaryFile(body)
            defer { try? FileManager.default.removeItem(at: file) }
            let schema = ContractTests.packageRoot.appendingPathComponent("docs/schemas/credential-event.schema.json").path
            let check = try ContractTests.python([
                "-c", "import json, sys, jsonschema; jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate(json.load(open(sys.argv[2])))",
                schema, file.path,
            ])
            #expect(check.status == 0, "the event does not match its schema: \(check.text)")
            return (published, try JSONValue.parse(body), body)
        }

        func close() {
            database.close()
            receiver.stop()
            harness.tearDown()
        }
    }

    /// The relay's hand-offs, as notify decodes them.
    static func handedOff(_ stage: NotifyStage, on database: PostgresConnection) throws -> [NotifyMessage] {
        try CredentialEventRelay.claim(stuckAfter: 300, on: database).map { handOff in
            #expect(handOff.target == Stage.notify.name)
            return try stage.decode(InboundMessage(body: handOff.body, to: .notify))
        }
    }

    @Test func anAppliedUnlinkIsASignedCredentialUnlinkedWebhookAndResult() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let (database, payment, credential) = (fixture.database, fixture.payment, fixture.credential)
        try Self.pulled("evt-unlink", merchantId: payment.merchantId, type: "UNLINK", on: database)
        #expect(try fixture.applier.applyPulled(on: database)["evt-unlink"] == [.unlinked(credentialId: credential.id, merchantId: payment.merchantId)])

        let stage = fixture.harness.makeStage()
        let (published, event, body) = try fixture.deliverOne(stage)
        #expect(try Self.handedOff(stage, on: database).isEmpty, "handed off once, then notified")
        #expect(event["type"] == "credential.unlinked")
        #expect(event["data"]?["credentialId"]?.stringValue == credential.id && event["data"]?["merchantId"] == "m-notify")
        #expect(event["data"]?["credential"]?["state"] == "unlinked" && event["data"]?["credential"]?["last4"] == "1234")
        #expect(event["data"]?["credential"]?["usage"] == "recurring" && event["data"]?["credential"]?["tokenType"] == "merchant")
        #expect(event["data"]?["paymentId"]?.stringValue == payment.paymentId.paymentIDText && event["data"]?["jobId"]?.stringValue == payment.jobId)
        #expect(event["data"]?["reason"] == "Apple UNLINK (USER)")
        #expect(!String(decoding: body, as: UTF8.self).contains("59-9-1"), "no sealed secret in the event")

        // The results exchange carries it, correlated by the credential's id (ResultSubject).
        #expect(published.map(\.rendered.routingKey) == ["credential.unlinked"])
        #expect(published[0].rendered.exchange == PipelineTopology.resultsExchange)
        #expect(published[0].rendered.properties.messageId == event["data"]?["id"]?.stringValue)
        #expect(published[0].rendered.properties.correlationId == credential.id)
        #expect(published[0].rendered.properties.headers.compactMapValues(\.stringValue) == [
            "merchantId": payment.merchantId, "jobId": payment.jobId, "paymentId": payment.paymentId.paymentIDText,
            "credentialId": credential.id, "type": "credential.unlinked",
        ])
        #expect(try fixture.harness.deliveries(payment.paymentId).map(\.eventType) == ["credential.unlinked"])
        #expect(try CredentialEventStore().events(credentialId: credential.id, on: database).map(\.notified) == [true])

        // A redelivered hand-off publishes the result again, never a second webhook.
        let row = try #require(try CredentialEventStore().events(credentialId: credential.id, on: database).first)
        let again = CredentialEventHandOff.handOff(.init(rowId: row.rowId, merchantId: payment.merchantId, paymentId: payment.paymentId, jobId: payment.jobId))
        guard case .success(.publish(let republished)) = stage.process([try stage.decode(InboundMessage(body: again.body, to: .notify))], database: database)[0]
        else { throw TestFailure("not re-published") }
        #expect(republished.first?.rendered.body == body && fixture.receiver.requests.count == 1)
        // A second UNLINK of the same token changes nothing, so the merchant is not told twice.
        try Self.pulled("evt-unlink-again", merchantId: payment.merchantId, type: "UNLINK", on: database)
        #expect(try fixture.applier.applyPulled(on: database)["evt-unlink-again"] == [.alreadyUnlinked(credentialId: credential.id)])
        #expect(try CredentialEventStore().events(credentialId: credential.id, on: database).count == 1)
    }

    @Test func anAppliedMetadataUpdateIsACredentialUpdatedWebhookAndResult() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        try Self.pulled("evt-meta", merchantId: fixture.payment.merchantId, type: "UPDATED_METADATA",
                        metadata: #"{"cardArt":[],"cardMetadata":{"fpanSuffix":"9876","expirationDate":"122031"}}"#, on: fixture.database)
        #expect(try fixture.applier.applyPulled(on: fixture.database)["evt-meta"]
                == [.updated(credentialId: fixture.credential.id, merchantId: fixture.payment.merchantId)])
        let (published, event, _) = try fixture.deliverOne(fixture.harness.makeStage())
        #expect(event["type"] == "credential.updated")
        #expect(event["data"]?["credential"]?["last4"] == "9876" && event["data"]?["credential"]?["expiry"] == "2031-12")
        #expect(event["data"]?["credential"]?["state"] == "active")
        #expect(published.map(\.rendered.routingKey) == ["credential.updated"])
        #expect(published[0].rendered.properties.correlationId == fixture.credential.id)
    }

    /// The notify worker's relay thread (`CredentialEventRelay`, every `PAYPIPE_RECONCILE_INTERVAL`) hands the recorded
    /// event over the real broker to the running notify stage: the merchant's webhook receives it once, and the results
    /// queue bound to `paypipe.results` gets it with `correlation_id` = the credential id.
    @Test func theNotifyWorkersRelayDeliversARecordedEventOverTheBroker() throws {
        let fixture = try Fixture(extra: ["PAYPIPE_RECONCILE_INTERVAL": "200ms"])
        defer { fixture.close() }
        let harness = fixture.harness
        let runtime = try StageRuntime(handler: harness.makeStage(), configuration: harness.configuration,
                                       logger: Logger(component: "notify", threshold: .debug, sink: harness.logSink), hooks: .none,
                                       components: { CredentialEventRelay.components($0) })
        try runtime.start()
        defer { runtime.stopAndWait() }
        #expect(try CredentialStore(vault: harness.vault).markUnlinked(fixture.credential.id, merchantId: fixture.payment.merchantId,
                                                                       reason: "customer asked", on: fixture.database) != .notFound)
        try TestServices.eventually("credential event notified") {
            try CredentialEventStore().events(credentialId: fixture.credential.id, on: fixture.database).map(\.notified) == [true]
        }
        var results: [AMQPDelivery] = []
        try TestServices.eventually("credential event on paypipe.results") {
            results += try harness.drain(harness.resultsQueue)
            return !results.isEmpty
        }
        let requests = fixture.receiver.requests
        #expect(requests.count == 1 && requests.allSatisfy(\.verified))
        #expect(results.map(\.routingKey) == ["credential.unlinked"] && results.first?.body == requests.first?.body)
        #expect(results.first?.properties.correlationId == fixture.credential.id)
        #expect(results.first?.properties.messageId == requests.first?.header("webhook-id"))
    }

    /// Another merchant's hand-off naming this merchant's event is unknown to it (the hand-off names its merchant, as
    /// an operation's does): nothing is sent.
    @Test func aHandOffNamingAnotherMerchantSendsNothing() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        _ = try CredentialStore(vault: fixture.harness.vault).markUnlinked(
            fixture.credential.id, merchantId: fixture.payment.merchantId, reason: "operator", on: fixture.database)
        let handOff = try #require(try CredentialEventStore().claimForHandOff(stuckAfter: 300, on: fixture.database).first)
        let forged = CredentialEventHandOff.handOff(.init(rowId: handOff.rowId, merchantId: "m-other", paymentId: handOff.paymentId, jobId: handOff.jobId))
        let stage = fixture.harness.makeStage()
        let result = stage.process([try stage.decode(InboundMessage(body: forged.body, to: .notify))], database: fixture.database)[0]
        guard case .failure(.unattributable(let code, _)) = result else { throw TestFailure("not refused: \(result)") }
        #expect(code == "unknown_payment" && fixture.receiver.requests.isEmpty)
    }
}
}
