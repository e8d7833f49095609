import Foundation
import HTTP
import Pipeline
import Postgres
import Synchronization

/// The endpoint Apple's merchant-token notifications reach (`paypipe-apple-notifications`, docs/merchant-tokens.md):
/// answers `GET [/<merchantId>]/notification/merchantToken/<eventId>` with 200 once the event id is committed in
/// `merchant_token_events`, and 500 when it cannot be, so that Apple retries ("up to three times", immediately [doc]).
///
/// Why a table and not a broker queue: the row is the idempotency key (Apple's retries of one id collapse into one
/// event), the puller needs per-event retry times across Apple's 7-day window, and the operator sees each event's
/// state; one committed INSERT is the whole durability question, with no publisher confirm to wait for.
public final class AppleNotificationService: Sendable {
    public struct Settings: Sendable {
        public var host: String
        public var port: UInt16
        public var threads: Int
        public var sources: NotificationSourcePolicy
        public var databaseURL: String

        public init(host: String, port: UInt16, threads: Int = 2, sources: NotificationSourcePolicy, databaseURL: String) {
            self.host = host
            self.port = port
            self.threads = threads
            self.sources = sources
            self.databaseURL = databaseURL
        }
    }

    public static let notificationsMetric = "paypipe_apple_notifications_total"
    public static let databaseMetric = "paypipe_database_up"
    static let stageLabel = ["stage": MerchantTokenSettings.notificationsName.rawValue]

    private let settings: Settings
    private let logger: Logger
    private let registry: MetricsRegistry
    private let server: Mutex<HTTPServer?> = Mutex(nil)
    /// The one connection the handler threads share: each request is a single short INSERT.
    private let database: Mutex<PostgresConnection?> = Mutex(nil)
    private let store = MerchantTokenEventStore()

    public init(settings: Settings, logger: Logger, registry: MetricsRegistry) {
        self.settings = settings
        self.logger = logger
        self.registry = registry
        registry.register(Self.notificationsMetric, kind: .counter,
                          help: "Apple merchant-token notifications by outcome (queued, repeated, failed, forbidden, not_found, method_not_allowed)")
        registry.register(Self.databaseMetric, kind: .gauge, help: "1 while the last database use succeeded")
        for outcome in ["queued", "repeated", "failed", "forbidden"] {
            registry.zero(Self.notificationsMetric, labels: ["outcome": outcome])
        }
    }

    /// Binds and serves; opens the database connection lazily (the first notification, or the readiness probe).
    public func start() throws {
        let server = HTTPServer(host: settings.host, port: settings.port, threads: settings.threads, maxBodyBytes: 4096,
                                connectionTimeout: 10) { [self] request in handle(request) }
        try server.start()
        self.server.withLock { $0 = server }
    }

    public var boundPort: UInt16 { server.withLock { $0?.boundPort ?? 0 } }

    /// Stops accepting, waits for in-flight requests (whose rows are committed or not: Apple retries those), closes the
    /// connection.
    public func stop() {
        let running = server.withLock { server -> HTTPServer? in
            defer { server = nil }
            return server
        }
        running?.stop()
        database.withLock { connection in
            connection?.close()
            connection = nil
        }
    }

    /// Readiness: the database takes a query (the endpoint's only dependency).
    public func databaseReachable() -> Bool {
        let reachable = withDatabase { try $0.simpleQuery("SELECT 1") } != nil
        return reachable
    }

    func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        switch NotificationAnswer.decide(method: request.method, path: request.path, remoteAddress: request.remoteAddress, sources: settings.sources) {
        case .notFound:
            count("not_found")
            return .text("not found\n", status: 404)
        case .methodNotAllowed:
            count("method_not_allowed")
            return .text("method not allowed\n", status: 405)
        case .forbidden:
            count("forbidden")
            logger.warning("notification_forbidden", [("remote", .string(request.remoteAddress ?? "unknown"))])
            return .text("forbidden\n", status: 403)
        case .queued(let notification):
            guard let inserted = withDatabase({ try store.enqueue([notification], on: $0) }) else {
                count("failed")
                return .text("not queued, retry\n", status: 500)
            }
            let repeated = !inserted.contains(notification.eventId)
            count(repeated ? "repeated" : "queued")
            logger.info(repeated ? "notification_repeated" : "notification_queued", [
                ("eventId", .string(notification.eventId)), ("merchantId", .string(notification.merchantId ?? "")),
            ])
            return .text("ok\n", status: 200)
        }
    }

    /// Runs `body` on the shared connection, connecting first when there is none; nil (logged, connection dropped so
    /// the next use reconnects) when the database fails.
    private func withDatabase<T: Sendable>(_ body: (PostgresConnection) throws -> T) -> T? {
        let result: Result<T, any Error> = database.withLock { connection in
            do {
                if connection == nil || connection?.isConnected == false {
                    connection?.close()
                    connection = try PostgresConnection(configuration: try PostgresConfiguration(url: settings.databaseURL))
                }
                return .success(try body(connection!))
            } catch {
                connection?.close()
                connection = nil
                return .failure(error)
            }
        }
        switch result {
        case .success(let value):
            registry.set(Self.databaseMetric, labels: Self.stageLabel, to: 1)
            return value
        case .failure(let error):
            registry.set(Self.databaseMetric, labels: Self.stageLabel, to: 0)
            logger.error("database_failed", [("error", .string(String(describing: error)))])
            return nil
        }
    }

    private func count(_ outcome: String) {
        registry.increment(Self.notificationsMetric, labels: ["outcome": outcome])
    }
}
