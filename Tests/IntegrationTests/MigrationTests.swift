import Foundation
import Pipeline
import Postgres
import Testing

extension Integration {
@Suite struct MigrationTests {
    @Test func migrationsAreIdempotent() throws {
        try TestServices.resetDatabase()   // applies every migration once
        let connection = try TestServices.database()
        defer { connection.close() }
        let migrator = Migrator(migrations: PayPipeSchema.migrations, lockKey: PayPipeSchema.migrationLockKey)
        #expect(try migrator.apply(on: connection).isEmpty)
        #expect(try migrator.status(on: connection).allSatisfy { $0.appliedAt != nil })
    }

    @Test func paymentTransitionsAreGuardedInSQL() throws {
        try TestServices.resetDatabase()
        let connection = try TestServices.database()
        defer { connection.close() }
        try connection.query("INSERT INTO merchants (id) VALUES ('m1')")
        let id = UUID()
        try connection.query(
            "INSERT INTO payments (id, merchant_id, job_id, job_hash, status, stage, first_received_at) VALUES ($1, 'm1', 'j1', $2, 'decrypted', 'authorize', now())",
            [id, [UInt8(1)]])
        let store = PaymentStore()
        #expect(try store.transition(id, from: .decrypted, to: .prepared, actor: "test", on: connection) == .applied)
        // A stale writer expecting the old status changes nothing.
        #expect(try store.transition(id, from: .decrypted, to: .failed, actor: "test", errorCode: "x", on: connection) == .statusWas(.prepared))
        #expect(try store.load(id, on: connection)?.status == .prepared)
        // The audit trail is append-only.
        #expect(throws: PostgresError.self) { try connection.query("DELETE FROM payment_events") }
        // The status column refuses values outside the state machine.
        #expect(throws: PostgresError.self) { try connection.query("UPDATE payments SET status = 'paid' WHERE id = $1", [id]) }
    }
}
}
