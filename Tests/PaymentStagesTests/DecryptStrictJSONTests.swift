import Foundation
@testable import PaymentStages
import Pipeline
import Testing

/// The decrypt stage's strict RFC 8259 check in front of `PaymentJob.decode` (Foundation's parser is lenient).
@Suite struct DecryptStrictJSONTests {
    static let job = #"{"jobId":"j1","merchantId":"m1","orderReference":"o","amount":{"value":1,"currency":"GBP"},"applePayToken":{}}"#

    @Test(arguments: [
        #"{"jobId":"j1","merchantId":"m1","amount":{"value":1,"currency":"GBP"},"amount":{"value":9,"currency":"GBP"}}"#,
        #"{"jobId":"j1","merchantId":"m1",}"#,
        "\u{FEFF}" + job,
        job + "x",
        #"{"jobId":"j1","merchantId":"m1","x":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}",
    ])
    func lenientJSONIsAMalformedJob(_ body: String) {
        #expect(throws: StageFailure.self) { try DecryptStage.requireStrictJSON(Array(body.utf8)) }
        do {
            try DecryptStage.requireStrictJSON(Array(body.utf8))
        } catch {
            #expect(error.code == "malformed_job")
            guard case .unattributable = error else { Issue.record("not unattributable: \(error)"); return }
        }
    }

    @Test func strictJSONAndInvalidUTF8PassThrough() throws {
        try DecryptStage.requireStrictJSON(Array(Self.job.utf8))
        try DecryptStage.requireStrictJSON([0xFF, 0xFE, 0x7B])   // PaymentJob.decode names the UTF-8 problem
    }
}
