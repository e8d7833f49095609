import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

/// The workers' merchant cache against a real database: a batch's merchants are read in at most two statements however
/// many there are (outside a transaction each statement is a commit of its own), and what each lookup finds is what a
/// lookup per merchant would.
extension Integration {
@Suite struct MerchantDirectoryTests {
    @Test func aBatchsMerchantsAreReadInTwoStatementsAndEachFindsItsOwn() throws {
        let harness = try DecryptHarness()
        let database = try TestServices.database()
        defer { database.close() }
        let store = MerchantStore(vault: harness.vault)
        let prefix = "dir-\(UUID().uuidString.prefix(8))"
        let ids = (1...3).map { "\(prefix)-\($0)" }
        for id in ids {
            var document = harness.sandbox.merchantDocument()
            document.id = id
            try store.apply(document, baseDirectory: URL(fileURLWithPath: harness.sandbox.directory), deployment: .sandbox, on: database)
        }
        let unknown = "\(prefix)-unknown"
        // Every entry is stale at once (no TTL), so each call revalidates what it holds.
        let directory = MerchantDirectory(store: store, ttl: 0)

        let first = try StatementCounter.counting(on: database) { try directory.entries(ids + [unknown], on: database) }
        #expect(first.statements == 1, "nothing cached: one load for all four")
        for id in ids { #expect(try first.value[id]?.get()?.merchant.id == id) }
        #expect(try first.value[unknown]?.get() == nil, "an unknown merchant is nil, not an error")

        // One merchant changes and one stops opening (its secrets sealed for another merchant id): each alone.
        var changed = harness.sandbox.merchantDocument()
        changed.id = ids[1]
        changed.publishers = MerchantPublishers(["billing"])
        try store.apply(changed, baseDirectory: URL(fileURLWithPath: harness.sandbox.directory), deployment: .sandbox, on: database)
        try database.query(
            "UPDATE merchants SET secrets_ciphertext = (SELECT secrets_ciphertext FROM merchants WHERE id = $1), updated_at = clock_timestamp() WHERE id = $2",
            [ids[0], ids[2]])
        let second = try StatementCounter.counting(on: database) { try directory.entries(ids + [unknown], on: database) }
        #expect(second.statements == 2, "one revalidation for the three cached, one load for the two that changed and the unknown")
        #expect(try second.value[ids[0]]?.get()?.merchant.config.publishers == nil, "unchanged: the cached entry")
        #expect(try second.value[ids[1]]?.get()?.merchant.config.publishers == ["billing"], "changed: reloaded")
        #expect(throws: (any Error).self, "unreadable secrets fail that merchant alone") { try second.value[ids[2]]?.get() }
        #expect(try second.value[unknown]?.get() == nil)
        #expect(try directory.entry(ids[1], on: database)?.merchant.config.publishers == ["billing"], "one merchant reads the same")
    }
}
}
