import Foundation
import JSON
import PaymentDomain
import Pipeline
import Postgres
import Testing

extension Integration {
/// Issue 44 item 5 (deferred payments): `paypipe stats` latency is the pipeline's, not the merchant's wait. A deferred
/// payment waits in `awaiting_amount` for up to 30 days until its completion; that wait is the merchant's, and counted
/// as latency it would swamp every percentile.
@Suite struct DeferredStatsTests {
    @Test func statsLatencyLeavesOutTheWaitForTheAmount() throws {
        let harness = try NotifyHarness()
        defer { harness.tearDown() }
        try harness.applyMerchant(webhookURL: nil)
        let database = try harness.database()
        defer { database.close() }
        let id = try harness.insertPayment().paymentId
        // Received two days ago, parked 2 s later, completed 2 days later, done 3 s after that: 5 s of pipeline.
        try database.query(
            """
            UPDATE payments SET stage = 'done', first_received_at = now() - interval '2 days 5 seconds',
                amount_completed_at = now() - interval '3 seconds', updated_at = now() WHERE id = $1
            """, [id])
        try database.query(
            """
            INSERT INTO payment_events (payment_id, at, from_status, to_status, stage, actor) VALUES
                ($1, now() - interval '2 days 3 seconds', 'decrypted', 'awaiting_amount', 'authorize', 'test'),
                ($1, now() - interval '3 seconds', 'awaiting_amount', 'decrypted', 'operations', 'test')
            """, [id])
        let output = try harness.paypipe(["stats", "--json"])
        #expect(output.status == 0, "\(output.text)")
        let report = try JSONValue.parse(Array(output.text.utf8))
        let p50 = try #require(report["latencyMilliseconds"]?["p50"]?.doubleValue, "\(output.text)")
        #expect(p50 > 4_000 && p50 < 6_000, "the pipeline's 5 s, not the 2-day wait: \(p50) ms")
    }
}
}
