// pg-bench: single-connection PostgreSQL throughput through the Postgres module.
//
// Measures (1) one transaction per unit of work — BEGIN, INSERT, UPDATE, COMMIT — (2) batched inserts, 100 per
// transaction, one statement at a time, and (3) the same batches sent with `executeBatch` (pipelined), against
// PAYPIPE_TEST_DATABASE_URL (default: the local test database), and prints JSON.
// Usage: pg-bench [seconds-per-phase]   (default 3)
import Foundation
import Postgres

let url = ProcessInfo.processInfo.environment["PAYPIPE_TEST_DATABASE_URL"]
    ?? "postgresql://postgres@127.0.0.1:5432/paypipe_test"
let seconds = CommandLine.arguments.dropFirst().first.flatMap(Double.init) ?? 3
let batchSize = 100

struct Report: Encodable {
    let serverVersion: String
    let synchronousCommit: String
    let secondsPerPhase: Double
    let singleTransactions: Int
    let singleTransactionsPerSecond: Double
    let batchSize: Int
    let batchedRows: Int
    let batchedRowsPerSecond: Double
    let pipelinedRows: Int
    let pipelinedRowsPerSecond: Double
}

/// Runs `work` repeatedly for `seconds` after a short warm-up; returns (iterations, elapsed seconds).
func measure(for seconds: Double, _ work: () throws -> Void) throws -> (Int, Double) {
    for _ in 0..<20 { try work() }
    let start = Date()
    var iterations = 0
    while Date().timeIntervalSince(start) < seconds {
        try work()
        iterations += 1
    }
    return (iterations, Date().timeIntervalSince(start))
}

do {
    let connection = try PostgresConnection(configuration: PostgresConfiguration(url: url))
    let table = "pp_bench_\(UInt32.random(in: 0...UInt32.max))"
    try connection.simpleQuery("""
        CREATE TABLE \(table) (id uuid PRIMARY KEY, amount int8 NOT NULL, status text NOT NULL,
                               created_at timestamptz NOT NULL, updated_at timestamptz)
        """)
    defer { try? connection.simpleQuery("DROP TABLE IF EXISTS \(table)") }
    let insert = "INSERT INTO \(table) (id, amount, status, created_at) VALUES ($1, $2, $3, $4)"
    let update = "UPDATE \(table) SET status = $2, updated_at = $3 WHERE id = $1"

    let (transactions, singleElapsed) = try measure(for: seconds) {
        try connection.transaction { connection in
            let id = UUID()
            try connection.query(insert, [id, 1_299, "received", Date()])
            try connection.query(update, [id, "authorised", Date()])
        }
    }
    let (batches, batchElapsed) = try measure(for: seconds) {
        try connection.transaction { connection in
            for _ in 0..<batchSize {
                try connection.query(insert, [UUID(), 1_299, "received", Date()])
            }
        }
    }
    let (pipelinedBatches, pipelinedElapsed) = try measure(for: seconds) {
        try connection.transaction { connection in
            let now = Date()
            try connection.executeBatch(insert, (0..<batchSize).map { _ in [UUID(), 1_299, "received", now] })
        }
    }
    let settings = try connection.query(
        "SELECT current_setting('server_version') AS version, current_setting('synchronous_commit') AS sync")[0]
    let report = Report(
        serverVersion: try settings.decode("version"),
        synchronousCommit: try settings.decode("sync"),
        secondsPerPhase: seconds,
        singleTransactions: transactions,
        singleTransactionsPerSecond: (Double(transactions) / singleElapsed).rounded(),
        batchSize: batchSize,
        batchedRows: batches * batchSize,
        batchedRowsPerSecond: (Double(batches * batchSize) / batchElapsed).rounded(),
        pipelinedRows: pipelinedBatches * batchSize,
        pipelinedRowsPerSecond: (Double(pipelinedBatches * batchSize) / pipelinedElapsed).rounded()
    )
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.keyEncodingStrategy = .convertToSnakeCase
    print(String(decoding: try encoder.encode(report), as: UTF8.self))
} catch {
    FileHandle.standardError.write(Data("pg-bench: \(error)\n".utf8))
    exit(1)
}
