import AMQP
import Foundation
import Pipeline
import Postgres

/// The real RabbitMQ and PostgreSQL started by `scripts/services` (see `scripts/test`), and helpers to
/// reset them between tests and to restart them for outage tests.
enum TestServices {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }
    static var amqpURL: String { environment["PAYPIPE_TEST_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2f" }
    static var databaseURL: String { environment["PAYPIPE_TEST_DATABASE_URL"] ?? "postgresql://postgres@127.0.0.1:5432/paypipe_test" }
    /// RabbitMQ's rabbitmq_prometheus endpoint (scripts/services enables it with per-queue series).
    static var brokerMetricsURL: String { environment["PAYPIPE_TEST_RABBITMQ_METRICS_URL"] ?? "http://127.0.0.1:15692" }

    static var servicesScript: String {
        environment["PAYPIPE_SERVICES_SCRIPT"]
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/services").path
    }

    static func database() throws -> PostgresConnection {
        try PostgresConnection(configuration: try PostgresConfiguration(url: databaseURL))
    }

    static func amqp() throws -> AMQPConnection {
        try AMQPConnection(configuration: try AMQPConfiguration(url: amqpURL))
    }

    /// Empty schema with PayPipe's migrations applied.
    static func resetDatabase() throws {
        let connection = try database()
        defer { connection.close() }
        try connection.simpleQuery("DROP SCHEMA public CASCADE; CREATE SCHEMA public;")
        _ = try Migrator(migrations: PayPipeSchema.migrations, lockKey: PayPipeSchema.migrationLockKey).apply(on: connection)
    }

    /// Deletes every pipeline queue so each test starts from an empty broker (workers re-declare them).
    static func resetBroker(retrySchedule: RetrySchedule) throws {
        let connection = try amqp()
        defer { connection.close() }
        for queue in PipelineTopology.topology(retrySchedule: retrySchedule).queues {
            try connection.deleteQueue(queue.name)
        }
        try connection.declare(PipelineTopology.topology(retrySchedule: retrySchedule))
    }

    /// Runs `scripts/services ARGS` (e.g. `restart rabbitmq`) and fails the test if it fails.
    static func services(_ arguments: String...) throws {
        let status = try ChildProcess.run("/bin/bash", [servicesScript] + arguments)
        guard status == 0 else {
            throw TestFailure("scripts/services \(arguments.joined(separator: " ")) exited \(status)")
        }
    }

    /// Polls `condition` until it holds or `timeout` passes.
    static func eventually(timeout: Double = 20, _ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if (try? condition()) == true { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        if try condition() { return }
        throw TestFailure("timed out after \(timeout)s waiting for: \(what)")
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
