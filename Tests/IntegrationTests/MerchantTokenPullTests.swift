import Foundation
import PaymentDomain
import HTTP
import PayPipeDevTools
import PaymentStages
import Pipeline
import Testing

extension Integration {
    /// The pull half of Apple's tap-and-pull on real PostgreSQL and a real mutual-TLS simulator of Apple's API:
    /// notification → queued → pulled with the merchant's client certificate and an x-request-id → decided; a caller
    /// without the right certificate never gets an event; Apple refusing an event ends it.
    @Suite struct MerchantTokenPullTests {
        static let unlink = Array(#"{"eventType":"UNLINK","merchantTokenIdentifier":"DNITHE000000000000000001","reason":"USER","merchantTokenMetadata":{"cardArt":[],"cardMetadata":{"fpanSuffix":"1234"}}}"#.utf8)

        /// Throw-away certificates and the mutual-TLS simulator of Apple's API, started.
        static func appleAPI(events: [String: [UInt8]] = [:]) throws -> (MutualTLSFiles, AppleTokenAPISimulator) {
            let files = try MutualTLSFiles()
            let simulator = AppleTokenAPISimulator(files: files.server)
            for (eventId, body) in events { simulator.addEvent(merchantId: "merchant.com.example", eventId: eventId, body: body) }
            do {
                try simulator.start()
            } catch {
                files.remove()
                throw error
            }
            return (files, simulator)
        }

        func puller(_ simulator: AppleTokenAPISimulator, _ files: MutualTLSFiles, merchant: String = "merchant-a",
                    certificate: String? = nil, key: String? = nil) -> MerchantTokenEventPuller {
            let identity = AppleTokenAPIIdentity(appleMerchantId: "merchant.com.example", certificatePath: certificate ?? files.clientCertificate,
                                                 keyPath: key ?? files.clientKey)
            return MerchantTokenEventPuller(baseURL: simulator.baseURL, identity: { $0 == merchant ? identity : nil },
                                            caCertificatePath: files.caCertificate, timeout: 10)
        }

        @Test func aNotifiedEventIsPulledOverMutualTLSAndDecided() throws {
            try TestServices.resetDatabase()
            let (files, simulator) = try Self.appleAPI(events: ["evt-1": Self.unlink])
            defer { simulator.stop(); files.remove() }

            let endpoint = try AppleNotificationTests.service()
            defer { endpoint.stop() }
            #expect(try AppleNotificationTests.get(endpoint, "/merchant-a/notification/merchantToken/evt-1") == 200)
            #expect(try AppleNotificationTests.get(endpoint, "/merchant-a/notification/merchantToken/evt-unknown") == 200)
            #expect(try AppleNotificationTests.get(endpoint, "/merchant-b/notification/merchantToken/evt-b") == 200)

            let database = try TestServices.database()
            defer { database.close() }
            let outcomes = try puller(simulator, files).pullDue(on: database)
            guard case .pulled(let event, .unlink(merchantTokenIdentifier: "DNITHE000000000000000001", reason: "USER")) = outcomes["evt-1"] else {
                Issue.record("evt-1: \(String(describing: outcomes["evt-1"])); server: \(simulator.lastRefusalReason ?? "-")"); return
            }
            #expect(event.metadata?["cardMetadata"]?["fpanSuffix"]?.stringValue == "1234")
            guard case .failed(let refused) = outcomes["evt-unknown"] else { Issue.record("Apple refused evt-unknown: final"); return }
            #expect(refused.contains("400"))
            guard case .retry = outcomes["evt-b"] else { Issue.record("merchant-b has no identity yet: it waits"); return }

            let rows = Dictionary(uniqueKeysWithValues: try MerchantTokenEventStore().list(on: database).map { ($0.eventId, $0) })
            #expect(rows["evt-1"]?.state == "pulled" && rows["evt-1"]?.eventType == "UNLINK"
                    && rows["evt-1"]?.merchantTokenIdentifier == "DNITHE000000000000000001")
            #expect(rows["evt-unknown"]?.state == "failed" && rows["evt-b"]?.state == "queued" && rows["evt-b"]?.attempts == 1)
            // Each call carried its own x-request-id; Apple's path named Apple's merchant identifier.
            let calls = simulator.calls
            #expect(calls.count == 2 && Set(calls.map(\.requestId)).count == 2)
            #expect(calls.contains { $0.path == "/paymentservices/v1/merchantId/merchant.com.example/merchantToken/event/evt-1" })
            // Nothing is due any more: a second round pulls nothing (evt-b waits for its next attempt time).
            #expect(try puller(simulator, files).pullDue(on: database).isEmpty)
        }

        @Test func withoutTheMerchantsCertificateNoEventIsServedAndTheEventWaits() throws {
            try TestServices.resetDatabase()
            let (files, simulator) = try Self.appleAPI(events: ["evt-1": Self.unlink])
            defer { simulator.stop(); files.remove() }
            let database = try TestServices.database()
            defer { database.close() }
            try MerchantTokenEventStore().enqueue([MerchantTokenNotification(merchantId: "merchant-a", eventId: "evt-1")], on: database)

            // A certificate from another CA: the handshake fails, nothing reaches the API.
            let stranger = puller(simulator, files, certificate: files.strangerCertificate, key: files.strangerKey)
            guard case .retry(_, let reason) = try stranger.pullDue(on: database)["evt-1"] else { Issue.record("a refused handshake retries"); return }
            #expect(reason.contains("unreachable"))
            #expect(simulator.calls.isEmpty && simulator.refusedHandshakes >= 1)
            // No certificate at all: refused too (plain HTTPClient).
            let bare = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10, caCertificatePath: files.caCertificate))
            #expect(throws: HTTPClientError.self) {
                try bare.send(MerchantTokenEventPull.request(baseURL: simulator.baseURL, appleMerchantId: "merchant.com.example", eventId: "evt-1", requestId: "r"))
            }
            #expect(simulator.calls.isEmpty)
            // The right certificate but no x-request-id: Apple's 400.
            let identified = HTTPClient(configuration: HTTPClientConfiguration(
                connectTimeout: 5, totalTimeout: 10, caCertificatePath: files.caCertificate,
                clientCertificatePath: files.clientCertificate, clientKeyPath: files.clientKey))
            let noRequestId = try identified.send(HTTPRequest(
                url: "\(simulator.baseURL)/paymentservices/v1/merchantId/merchant.com.example/merchantToken/event/evt-1",
                headers: [HTTPHeader(name: "Content-Type", value: "application/json")]))
            #expect(noRequestId.status == 400)
            // The CA's certificate of another Apple merchant id: 403, the event is not served to it.
            let other = try files.client(uid: "merchant.com.other")
            let foreign = HTTPClient(configuration: HTTPClientConfiguration(
                connectTimeout: 5, totalTimeout: 10, caCertificatePath: files.caCertificate,
                clientCertificatePath: other.certificate, clientKeyPath: other.key))
            #expect(try foreign.send(MerchantTokenEventPull.request(
                baseURL: simulator.baseURL, appleMerchantId: "merchant.com.example", eventId: "evt-1", requestId: "r-foreign")).status == 403)
            // Apple's unlink: 204 for a known token, 400 for an unknown one.
            simulator.addToken(merchantId: "merchant.com.example", identifier: "T1")
            for (identifier, status) in [("T1", 204), ("T2", 400)] {
                let answer = try identified.send(HTTPRequest(
                    method: "POST", url: "\(simulator.baseURL)/paymentservices/v1/merchantId/merchant.com.example/merchantToken/unlink",
                    headers: [HTTPHeader(name: "Content-Type", value: "application/json"), HTTPHeader(name: "x-request-id", value: "u-\(identifier)")],
                    body: Array(#"{"merchantTokenIdentifier":"\#(identifier)"}"#.utf8)))
                #expect(answer.status == status, "\(identifier)")
            }
            #expect(simulator.isUnlinked(merchantId: "merchant.com.example", identifier: "T1"))
        }

        /// Apple's events applied to the stored credential: the metadata update replaces the card metadata, last four
        /// and expiry; UNLINK unlinks it (secrets shredded) exactly once; a repeated UNLINK changes nothing more.
        @Test func pulledEventsAreAppliedToTheCredentialExactlyOnce() throws {
            let connection = try TestServices.database()
            defer { connection.close() }
            let credentials = try CredentialStoreTests.store()
            let credential = try credentials.create(CredentialStoreTests.new(try CredentialStoreTests.payment(on: connection)), on: connection)
            let (files, simulator) = try Self.appleAPI()
            defer { simulator.stop(); files.remove() }
            let token = "DNITHE000000000000000001"
            simulator.addEvent(merchantId: "merchant.com.example", eventId: "evt-meta", body: Array(
                #"{"eventType":"UPDATED_METADATA","merchantTokenIdentifier":"\#(token)","reason":"ISSUER","merchantTokenMetadata":{"cardArt":[],"cardMetadata":{"fpanSuffix":"9876","expirationDate":"122031"}}}"#.utf8))
            simulator.addEvent(merchantId: "merchant.com.example", eventId: "evt-unlink", body: Self.unlink)
            simulator.addEvent(merchantId: "merchant.com.example", eventId: "evt-unlink-again", body: Self.unlink)
            simulator.addEvent(merchantId: "merchant.com.example", eventId: "evt-other-token", body: Array(
                #"{"eventType":"UNLINK","merchantTokenIdentifier":"DNITHE000000000000000999","reason":"USER"}"#.utf8))
            let store = MerchantTokenEventStore()
            for event in ["evt-meta", "evt-unlink", "evt-unlink-again", "evt-other-token"] {
                try store.enqueue([MerchantTokenNotification(merchantId: "m1", eventId: event)], on: connection)
            }
            #expect(try puller(simulator, files, merchant: "m1").pullDue(on: connection).count == 4)

            let applier = MerchantTokenEventApplier(credentials: credentials)
            let changes = try applier.applyPulled(on: connection)
            #expect(changes["evt-meta"] == [.updated(credentialId: credential.id, merchantId: "m1")])
            #expect(changes["evt-unlink"] == [.unlinked(credentialId: credential.id, merchantId: "m1")])
            #expect(changes["evt-unlink-again"] == [.alreadyUnlinked(credentialId: credential.id)])
            #expect(changes["evt-other-token"] == [.noCredential])
            let stored = try #require(try credentials.find(credential.id, merchantId: "m1", on: connection))
            #expect(stored.state == .unlinked && stored.isShredded && stored.last4 == "9876" && stored.expiry == CardExpiry(year: 2031, month: 12))
            #expect(stored.cardMetadata["cardMetadata"]?["fpanSuffix"]?.stringValue == "9876")
            #expect(try credentials.secrets(stored, on: connection) == nil)
            let rows = try store.list(on: connection)
            #expect(rows.allSatisfy { $0.state == "applied" } && rows.count == 4)
            #expect(rows.first { $0.eventId == "evt-unlink" }?.appliedNote == "credential \(credential.id) unlinked")
            // Nothing left to apply: a second round changes nothing.
            #expect(try applier.applyPulled(on: connection).isEmpty)
        }

        /// Apple's bare path (no merchant in the notification) with two merchants' identities, `m1` for Apple's
        /// `merchant.com.a` and `m2` for `merchant.com.b`, both holding a credential with the same token identifier: Apple
        /// serves the event only to `merchant.com.b`, so the event becomes `m2`'s and unlinks `m2`'s credential only.
        /// An event Apple serves to nobody stays unresolved and unlinks nothing.
        @Test func aBarePathEventIsAppliedOnlyWithinTheMerchantAppleServedItTo() throws {
            let connection = try TestServices.database()
            defer { connection.close() }
            let credentials = try CredentialStoreTests.store()
            let first = try credentials.create(CredentialStoreTests.new(try CredentialStoreTests.payment(on: connection)), on: connection)
            let paymentB = UUID()
            try connection.query(
                """
                INSERT INTO payments (id, merchant_id, job_id, job_hash, amount_minor, currency, status, stage, first_received_at)
                VALUES ($1, 'm2', 'j2', $2, 999, 'GBP', 'submitting', 'submit', now())
                """, [paymentB, [UInt8(2)]])
            var newB = CredentialStoreTests.new(paymentB)
            newB.merchantId = "m2"
            let second = try credentials.create(newB, on: connection)
            #expect(first.merchantTokenIdentifier == second.merchantTokenIdentifier, "one token identifier in two merchants' credentials")

            let (files, simulator) = try Self.appleAPI()
            defer { simulator.stop(); files.remove() }
            simulator.addEvent(merchantId: "merchant.com.b", eventId: "evt-bare", body: Self.unlink)
            let store = MerchantTokenEventStore()
            try store.enqueue([MerchantTokenNotification(merchantId: nil, eventId: "evt-bare"),
                               MerchantTokenNotification(merchantId: nil, eventId: "evt-nobody")], on: connection)
            let apple = ["m1": "merchant.com.a", "m2": "merchant.com.b"]
            let identities = try apple.mapValues { uid in
                let (certificate, key) = try files.client(uid: uid)
                return AppleTokenAPIIdentity(appleMerchantId: uid, certificatePath: certificate, keyPath: key)
            }
            let puller = MerchantTokenEventPuller(
                baseURL: simulator.baseURL, identity: { identities[$0] },
                merchants: { apple.keys.sorted() }, caCertificatePath: files.caCertificate, timeout: 10)
            let outcomes = try puller.pullDue(on: connection)
            guard case .pulled = outcomes["evt-bare"], case .retry(_, let reason) = outcomes["evt-nobody"] else {
                Issue.record("\(outcomes)"); return
            }
            #expect(reason.contains("m1: 400") && reason.contains("m2: 400"), "\(reason)")
            // Each identity asked for each event, under its own Apple merchant id.
            #expect(Set(simulator.calls.map(\.path)) == Set(["merchant.com.a", "merchant.com.b"].flatMap { apple in
                ["evt-bare", "evt-nobody"].map { "/paymentservices/v1/merchantId/\(apple)/merchantToken/event/\($0)" }
            }))
            let rows = Dictionary(uniqueKeysWithValues: try store.list(on: connection).map { ($0.eventId, $0) })
            #expect(rows["evt-bare"]?.merchantId == "m2" && rows["evt-bare"]?.state == "pulled")
            #expect(rows["evt-nobody"]?.merchantId == nil && rows["evt-nobody"]?.state == "queued")

            let changes = try MerchantTokenEventApplier(credentials: credentials).applyPulled(on: connection)
            #expect(changes["evt-bare"] == [.unlinked(credentialId: second.id, merchantId: "m2")])
            #expect(try credentials.find(second.id, merchantId: "m2", on: connection)?.state == .unlinked)
            #expect(try credentials.find(first.id, merchantId: "m1", on: connection)?.state == .active, "the other merchant's is untouched")
        }

        /// The operations worker's upkeep runs the pull and the apply once `PAYPIPE_APPLE_IDENTITY_DIRECTORY` is set
        /// (MerchantTokenUpkeep.fromEnvironment): a notified UNLINK unlinks the credential in one upkeep round.
        @Test func theOperationsUpkeepPullsAndAppliesWhenConfigured() throws {
            let connection = try TestServices.database()
            defer { connection.close() }
            let credentials = try CredentialStoreTests.store()
            let credential = try credentials.create(CredentialStoreTests.new(try CredentialStoreTests.payment(on: connection)), on: connection)
            let (files, simulator) = try Self.appleAPI(events: ["evt-1": Self.unlink])
            defer { simulator.stop(); files.remove() }
            let merchant = files.directory.appendingPathComponent("identities/m1")
            try FileManager.default.createDirectory(at: merchant, withIntermediateDirectories: true)
            try Data("merchant.com.example".utf8).write(to: merchant.appendingPathComponent("merchant-identifier"))
            try FileManager.default.copyItem(atPath: files.clientCertificate, toPath: merchant.appendingPathComponent("identity.cert.pem").path)
            try FileManager.default.copyItem(atPath: files.clientKey, toPath: merchant.appendingPathComponent("identity.key.pem").path)
            try MerchantTokenEventStore().enqueue([MerchantTokenNotification(merchantId: "m1", eventId: "evt-1")], on: connection)

            #expect(try MerchantTokenUpkeep.fromEnvironment(EnvironmentReader([:]), vault: credentials.vault) == nil)
            let operations = OperationsStage(directory: MerchantDirectory(store: MerchantStore(vault: credentials.vault), ttl: 0), client: TrustPaymentsClient(
                http: HTTPClientConfiguration(connectTimeout: 0.5, totalTimeout: 1), transport: .init(deployment: .sandbox),
                webservices: WebservicesTransport(connectTimeout: 0.5, totalTimeout: 1)))
            let stage = OperationsWorker(operations, upkeepRound: OperationsUpkeepRound(stage: operations, merchantTokens: try MerchantTokenUpkeep.fromEnvironment(EnvironmentReader([
                "PAYPIPE_APPLE_IDENTITY_DIRECTORY": files.directory.appendingPathComponent("identities").path,
                "PAYPIPE_APPLE_TOKEN_API_URL": simulator.baseURL, "PAYPIPE_APPLE_TOKEN_API_CA_FILE": files.caCertificate,
            ]), vault: credentials.vault)))
            let registry = MetricsRegistry()
            stage.attach(metrics: registry)
            let before = try MetricsScrape(registry.render())
            #expect(before.value(MerchantTokenMetrics.pullsMetric, ["outcome": "failed"]) == 0, "the alert's series exists at 0")
            try stage.upkeep(database: connection, logger: Logger(component: "test", threshold: .error))
            #expect(try credentials.find(credential.id, merchantId: "m1", on: connection)?.state == .unlinked)
            #expect(try MerchantTokenEventStore().list(on: connection).map(\.state) == ["applied"])
            // The pull's series (docs/operations.md): one event pulled, one credential unlinked.
            let after = try MetricsScrape(registry.render())
            #expect(after.value(MerchantTokenMetrics.pullsMetric, ["outcome": "pulled"]) == 1)
            #expect(after.value(MerchantTokenMetrics.pullsMetric, ["outcome": "failed"]) == 0)
            #expect(after.value(MerchantTokenMetrics.appliedMetric, ["change": "unlinked"]) == 1)
        }

        /// Merchant-initiated unlink of an MPAN credential: Apple's unlink API over mutual TLS, then `unlinked` exactly
        /// once; Apple out of reach leaves the credential active; a repeat calls nobody and says so.
        @Test func aMerchantUnlinkTellsAppleThenUnlinksOnce() throws {
            let connection = try TestServices.database()
            defer { connection.close() }
            let credentials = try CredentialStoreTests.store()
            let credential = try credentials.create(CredentialStoreTests.new(try CredentialStoreTests.payment(on: connection)), on: connection)
            let (files, simulator) = try Self.appleAPI()
            defer { simulator.stop(); files.remove() }
            simulator.addToken(merchantId: "merchant.com.example", identifier: "DNITHE000000000000000001")
            func unlink(certificate: String, key: String) throws -> MerchantTokenUnlink.Result {
                try MerchantTokenUnlink.unlink(
                    credential.id, merchantId: "m1", reason: "customer cancelled", credentials: credentials,
                    identity: AppleTokenAPIIdentity(appleMerchantId: "merchant.com.example", certificatePath: certificate, keyPath: key),
                    baseURL: simulator.baseURL, caCertificatePath: files.caCertificate, on: connection)
            }
            #expect(throws: MerchantTokenUnlink.Failure.self) { try unlink(certificate: files.strangerCertificate, key: files.strangerKey) }
            #expect(try credentials.find(credential.id, merchantId: "m1", on: connection)?.state == .active)

            #expect(try unlink(certificate: files.clientCertificate, key: files.clientKey) == .unlinked(appleCalled: true))
            #expect(simulator.isUnlinked(merchantId: "merchant.com.example", identifier: "DNITHE000000000000000001"))
            let stored = try #require(try credentials.find(credential.id, merchantId: "m1", on: connection))
            #expect(stored.state == .unlinked && stored.isShredded && stored.stateReason == "customer cancelled")
            #expect(try unlink(certificate: files.clientCertificate, key: files.clientKey) == .alreadyInactive(.unlinked))
            #expect(simulator.calls.count == 1)
            #expect(try MerchantTokenUnlink.unlink("cred_000000000000000000000000", merchantId: "m1", reason: "x", credentials: credentials,
                                                   identity: nil, baseURL: simulator.baseURL, caCertificatePath: nil, on: connection) == .notFound)
        }
    }
}
