import Foundation
import HTTP
import PaymentStages
import Pipeline
import Testing

extension Integration {
    /// `paypipe-apple-notifications` on real PostgreSQL: 200 once the event id is committed (even for a token nobody
    /// knows: the endpoint never looks), one row however often Apple retries, 500 when the row cannot be written,
    /// 403 from outside the allowed networks; and the executable stops cleanly on SIGTERM.
    @Suite struct AppleNotificationTests {
        static func service(databaseURL: String = TestServices.databaseURL, sources: NotificationSourcePolicy = .any) throws -> AppleNotificationService {
            let service = AppleNotificationService(
                settings: .init(host: "127.0.0.1", port: 0, sources: sources, databaseURL: databaseURL),
                logger: Logger(component: "apple-notifications-test", threshold: .error), registry: MetricsRegistry())
            try service.start()
            return service
        }

        static func get(_ service: AppleNotificationService, _ path: String) throws -> Int {
            try HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 10))
                .send(HTTPRequest(url: "http://127.0.0.1:\(service.boundPort)\(path)")).status
        }

        static func rows() throws -> [MerchantTokenEventStore.Row] {
            let database = try TestServices.database()
            defer { database.close() }
            return try MerchantTokenEventStore().list(on: database)
        }

        @Test func anEventIdIsQueuedOnceAnd200EvenForAnUnknownToken() throws {
            try TestServices.resetDatabase()
            let service = try Self.service()
            defer { service.stop() }
            // Nothing about this event or its token exists anywhere: Apple still gets 200 [doc].
            #expect(try Self.get(service, "/merchant-a/notification/merchantToken/evt-unknown-1") == 200)
            // Apple's immediate retries of the same id, and the bare path of another event.
            for _ in 0..<3 { #expect(try Self.get(service, "/merchant-a/notification/merchantToken/evt-unknown-1") == 200) }
            #expect(try Self.get(service, "/notification/merchantToken/evt-2") == 200)
            #expect(try Self.get(service, "/notification/merchantToken/") == 404)
            let rows = try Self.rows().sorted { $0.eventId < $1.eventId }
            #expect(rows.map(\.eventId) == ["evt-2", "evt-unknown-1"])
            #expect(rows.map(\.merchantId) == [nil, "merchant-a"])
            #expect(rows.map(\.notifications) == [1, 4])
            #expect(rows.allSatisfy { $0.state == "queued" && $0.attempts == 0 })
        }

        @Test func whenTheEventCannotBeQueuedTheAnswerIs500SoAppleRetries() throws {
            try TestServices.resetDatabase()
            // A database nobody listens on (a port just freed): the INSERT cannot happen.
            let probe = HTTPServer(host: "127.0.0.1", port: 0) { _ in .text("") }
            try probe.start()
            let closedPort = probe.boundPort
            probe.stop()
            let down = try Self.service(databaseURL: "postgresql://postgres@127.0.0.1:\(closedPort)/paypipe_test?connect_timeout=2")
            #expect(try Self.get(down, "/notification/merchantToken/evt-retry") == 500)
            #expect(!down.databaseReachable())
            down.stop()
            // The table gone (a broken schema) is a 500 too, not a 200 for a lost event.
            let database = try TestServices.database()
            try database.simpleQuery("ALTER TABLE merchant_token_events RENAME TO merchant_token_events_away")
            let broken = try Self.service()
            #expect(try Self.get(broken, "/notification/merchantToken/evt-retry") == 500)
            try database.simpleQuery("ALTER TABLE merchant_token_events_away RENAME TO merchant_token_events")
            database.close()
            // Apple's retry reaches a working endpoint: queued once.
            #expect(try Self.get(broken, "/notification/merchantToken/evt-retry") == 200)
            broken.stop()
            #expect(try Self.rows().map(\.eventId) == ["evt-retry"])
        }

        @Test func aSourceOutsideTheAllowedNetworksGets403AndNothingIsQueued() throws {
            try TestServices.resetDatabase()
            let apple = try #require(NotificationSourcePolicy.parse(NotificationSourcePolicy.appleNetworks.joined(separator: ",")))
            let service = try Self.service(sources: apple)
            defer { service.stop() }
            #expect(try Self.get(service, "/notification/merchantToken/evt-1") == 403)
            #expect(try Self.rows().isEmpty)
        }

        /// The real executable on two free ports (the endpoint, then metrics and probes) for `databaseURL`, once ready.
        static func executable(databaseURL: String = TestServices.databaseURL) throws -> (process: ChildProcess, ports: [UInt16]) {
            let binary = PipelineProcesses.binary("paypipe-apple-notifications")
            let ports = try (0..<2).map { _ in
                let probe = HTTPServer(host: "127.0.0.1", port: 0) { _ in .text("") }
                try probe.start()
                defer { probe.stop() }
                return probe.boundPort
            }
            let process = try ChildProcess.spawn(binary, [], environment: [
                "PAYPIPE_ENV": "sandbox", "PAYPIPE_DATABASE_URL": databaseURL,
                "PAYPIPE_APPLE_NOTIFICATIONS_HOST": "127.0.0.1", "PAYPIPE_APPLE_NOTIFICATIONS_PORT": "\(ports[0])",
                "PAYPIPE_APPLE_NOTIFICATIONS_ALLOWED_NETWORKS": "127.0.0.0/8",
                "PAYPIPE_METRICS_HOST": "127.0.0.1", "PAYPIPE_METRICS_PORT": "\(ports[1])",
            ])
            let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 1, totalTimeout: 5))
            do {
                try TestServices.eventually("the endpoint is ready") {
                    try client.send(HTTPRequest(url: "http://127.0.0.1:\(ports[1])/readyz")).status == 200
                }
            } catch {
                process.signal(SIGTERM)
                _ = process.wait(timeout: 20)
                throw error
            }
            return (process, ports)
        }

        @Test func theExecutableServesProbesAndStopsOnSIGTERM() throws {
            try TestServices.resetDatabase()
            let (process, ports) = try Self.executable()
            let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 1, totalTimeout: 5))
            #expect(try client.send(HTTPRequest(url: "http://127.0.0.1:\(ports[0])/m/notification/merchantToken/evt-p")).status == 200)
            let metrics = try client.send(HTTPRequest(url: "http://127.0.0.1:\(ports[1])/metrics"))
            #expect(String(decoding: metrics.body, as: UTF8.self).contains(#"paypipe_apple_notifications_total{outcome="queued"} 1"#))
            process.signal(SIGTERM)
            #expect(process.wait(timeout: 20) == 0)
            #expect(try Self.rows().map(\.eventId) == ["evt-p"])
        }
    }
}
