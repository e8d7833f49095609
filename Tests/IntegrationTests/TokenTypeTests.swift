import ApplePay
import ApplePaySandbox
import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
/// Issue #44 item 1 on the real database: every payment decrypt accepts records its token type (`merchant` when the
/// decrypted data carries `merchantTokenIdentifier`, else `device`; `unknown` when PayPipe does not decrypt), an MPAN's
/// identifier and metadata; the metric counts payments by merchant and token type; the payment's event carries it.
@Suite struct TokenTypeTests {
    @Test func decryptRecordsTheTokenTypeTheMetricCountsItAndTheEventCarriesIt() throws {
        let harness = try DecryptHarness()
        let stage = harness.makeStage()
        let registry = MetricsRegistry()
        stage.attach(metrics: registry)
        let merchantToken = SandboxMintRequest.MerchantToken(identifier: "DNITHE000000000000000042", fpanSuffix: "4242", expirationDate: "122030")
        let mpan = try harness.job("tt-mpan", token: harness.token { $0.merchantToken = merchantToken })
        let dpan = try harness.job("tt-dpan", token: harness.token(pan: "5500005555555559"))
        let database = try TestServices.database()
        defer { database.close() }
        let outcomes = stage.process([.job(try PaymentJob.decode(mpan)), .job(try PaymentJob.decode(dpan))], database: database)
        #expect(outcomes.allSatisfy { (try? $0.get()) != nil })

        let rows = try database.query(
            """
            SELECT job_id, token_type, merchant_token_identifier, merchant_token_metadata::text AS metadata FROM payments ORDER BY job_id
            """)
        let byJob = Dictionary(uniqueKeysWithValues: try rows.map { row in
            (try row.decode("job_id", as: String.self),
             (type: try row.decode("token_type", as: String?.self), id: try row.decode("merchant_token_identifier", as: String?.self),
              metadata: try row.decode("metadata", as: String?.self)))
        })
        #expect(byJob["tt-mpan"]?.type == "merchant" && byJob["tt-mpan"]?.id == "DNITHE000000000000000042")
        let metadata = try #require(byJob["tt-mpan"]?.metadata)
        #expect(metadata.contains(#""fpanSuffix": "4242""#) && metadata.contains(#""expirationDate": "122030""#))
        #expect(byJob["tt-dpan"]?.type == "device" && byJob["tt-dpan"]?.id == nil && byJob["tt-dpan"]?.metadata == nil)

        let merchant = SandboxEnvironment.merchantId
        #expect(registry.value(TokenTypeCounter.metric, labels: ["merchant": merchant, "token_type": "merchant"]) == 1)
        #expect(registry.value(TokenTypeCounter.metric, labels: ["merchant": merchant, "token_type": "device"]) == 1)
        // Redelivered in a later batch: handed on, not counted as a new payment's token.
        _ = stage.process([.job(try PaymentJob.decode(mpan))], database: database)
        #expect(registry.value(TokenTypeCounter.metric, labels: ["merchant": merchant, "token_type": "merchant"]) == 1)

        // The event of the (now failed) MPAN payment carries its token type.
        let id = try database.query("SELECT id FROM payments WHERE job_id = 'tt-mpan'")[0].decode("id", as: UUID.self)
        _ = try PaymentStore().fail([try PaymentStore.Failing(paymentId: id, from: .decrypted, rejection: Rejection(code: "internal_error", reason: "test"))], on: database)
        let record = try #require(try PaymentStore().load(id, on: database))
        let event = try #require(try PaymentEventLoader().load(record, on: database)?.event)
        #expect(event.tokenType == .merchant)
        #expect(String(decoding: event.body, as: UTF8.self).contains(#""status":"failed","tokenType":"merchant""#))
    }

    @Test func aPaymentThatFailedBeforeItsTokenWasReadHasNoTokenType() throws {
        let harness = try DecryptHarness()
        let database = try TestServices.database()
        defer { database.close() }
        let bad = try harness.job("tt-bad", token: harness.token(amount: 1000))
        _ = harness.makeStage().process([.job(try PaymentJob.decode(bad))], database: database)
        let row = try database.query("SELECT status, token_type FROM payments WHERE job_id = 'tt-bad'")[0]
        #expect(try row.decode("status", as: String.self) == "failed")
        #expect(try row.decode("token_type", as: String?.self) == nil)
    }
}
}
