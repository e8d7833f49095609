import Foundation
import FuzzTargets
import Testing

/// Every input in Tests/Fixtures/fuzz-regressions goes through `FuzzHarness.run`, the function the fuzzer calls,
/// and must end with exactly the classified outcome recorded for it in expected.tsv (docs/fuzzing.md). A fix that
/// regresses shows up as a crash of this test process or as a different outcome.
@Suite struct FuzzRegressionTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/fuzz-regressions")

    /// `file → (outcome code, substring of the detail or empty)` from expected.tsv.
    static func expectations() throws -> [String: (code: String, detail: String)] {
        let text = try String(contentsOf: folder.appendingPathComponent("expected.tsv"), encoding: .utf8)
        var result: [String: (String, String)] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 2 else { continue }
            result[fields[0]] = (fields[1], fields.count > 2 ? fields[2] : "")
        }
        return result
    }

    static func inputFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0 != "README.md" && $0 != "expected.tsv" }.sorted()
    }

    @Test func everyRegressionInputHasAnExpectation() throws {
        let expected = try Self.expectations()
        let files = try Self.inputFiles()
        #expect(files.count >= 8)
        #expect(Set(files) == Set(expected.keys))
    }

    @Test(arguments: try inputFiles())
    func regressionInputEndsWithItsRecordedOutcome(_ file: String) throws {
        let expectation = try #require(Self.expectations()[file])
        let input = try Array(Data(contentsOf: Self.folder.appendingPathComponent(file)))
        let outcome = FuzzHarness.run(input)
        #expect(outcome.code == expectation.code, "\(file): \(outcome)")
        #expect(expectation.detail.isEmpty || outcome.detail.contains(expectation.detail), "\(file): \(outcome)")
        #expect(!outcome.isOracleFailure)
    }

    /// The harness reaches the end of verification, not just the parsers: a real Apple token passes chain and
    /// signer-signature checks under the pinned root and fails only the signing-time window (the fixed clock is
    /// years after it was signed); its CMS under the template token passes the chain, then fails messageDigest.
    @Test func realTokenGoesThroughTheWholeVerificationPath() throws {
        let tokenURL = Self.folder.deletingLastPathComponent().appendingPathComponent("applepay/gala/token.json")
        let token = try Array(Data(contentsOf: tokenURL))
        #expect(FuzzHarness.run(FuzzSurface.token.framed(token)).code == "token:signing_time_out_of_range")
        let object = try #require(JSONSerialization.jsonObject(with: Data(token)) as? [String: Any])
        let paymentData = try #require((object["paymentData"] ?? object) as? [String: Any])
        let base64 = try #require(paymentData["signature"] as? String)
        let signature = try #require(Data(base64Encoded: base64))
        let cms = FuzzHarness.run(FuzzSurface.cms.framed(signature))
        #expect(cms.code == "cms:signature_invalid")
        #expect(cms.detail.contains("messageDigest"))
    }

    @Test func selectorByteRoutesEveryValue() {
        #expect(FuzzSurface(selector: 0) == .job)
        #expect(FuzzSurface(selector: 3) == .cms)
        #expect(FuzzSurface(selector: 8) == .webhookResponse)
        #expect(FuzzSurface(selector: 9) == .gatewayResponse)
        #expect(FuzzSurface(selector: 10) == .job)
        #expect(FuzzSurface(selector: 255) == .x509)  // 255 % 10
        #expect(FuzzHarness.run([]).code == "job:empty_input")
    }

    /// The peers' answers: a hostile endpoint's huge Retry-After (which trapped notify) is read, clamped, and a gateway
    /// answer signed with the seed secret goes through the same code the workers run.
    @Test func peerAnswersAreParsed() {
        let huge = FuzzSurface.webhookResponse.framed([0x01, 0x93] + Array("Retry-After: 9223372036854775807\r\n".utf8))
        #expect(FuzzHarness.run(huge).code == "webhook_response:accepted")
        #expect(FuzzHarness.run(FuzzSurface.webhookResponse.framed([0x00, 100])).code == "webhook_response:no_retry_after")
        #expect(FuzzHarness.run(FuzzSurface.gatewayResponse.framed(Array("[]".utf8))).code == "gateway_response:no_jwt")
    }
}
