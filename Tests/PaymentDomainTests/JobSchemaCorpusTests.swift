import Foundation
import JSON
@testable import PaymentDomain
import Testing

/// The decoder's side of the job schema's agreement with the code (the schema's side, with a JSON Schema validator, is
/// scripts/check-schemas, run by scripts/test): the good samples decode, the bad-input corpus's static cases are
/// refused as malformed or invalid exactly when the corpus says the decoder refuses them, and the schema's currencies
/// are the decoder's.
@Suite struct JobSchemaCorpusTests {
    static let fixtures = FailureCatalogueTests.root.appendingPathComponent("Tests/Fixtures")

    static func files(_ folder: String) throws -> [URL] {
        let directory = fixtures.appendingPathComponent(folder)
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
            .map { directory.appendingPathComponent($0) }
    }

    @Test func everyGoodSampleDecodes() throws {
        let samples = try Self.files("good-jobs")
        #expect(samples.count >= 10)
        for sample in samples {
            #expect(throws: Never.self, "\(sample.lastPathComponent)") { try PaymentJob.decode(Array(try Data(contentsOf: sample))) }
        }
    }

    @Test func theDecoderRefusesExactlyTheCorpusCasesItShould() throws {
        let corpus = Self.fixtures.appendingPathComponent("bad-input")
        let manifest = try JSONValue.parse(Array(try Data(contentsOf: corpus.appendingPathComponent("manifest.json"))))
        var checked = 0
        for entry in try #require(manifest["cases"]?.arrayValue) {
            guard let file = entry["file"]?.stringValue, let id = entry["id"]?.stringValue,
                  let code = entry["expect"]?["code"]?.stringValue else { continue }
            let body = Array(try Data(contentsOf: corpus.appendingPathComponent("cases").appendingPathComponent(file)))
            let verdict: String
            do {
                _ = try PaymentJob.decode(body)
                verdict = "decoded"
            } catch .unaddressed {
                verdict = "malformed_job"
            } catch .invalid {
                verdict = "invalid_job"
            }
            // unknown_merchant and the token codes are decided after decoding (merchant registry, decrypt); an unknown
            // merchant's invalid job is invalid to the decoder too, the registry only decides where it lands.
            let expected = ["malformed_job", "invalid_job"].contains(code) ? code : id == "unknown-merchant-invalid-job" ? "invalid_job" : "decoded"
            #expect(verdict == expected, "\(id): expected \(expected), got \(verdict)")
            checked += 1
        }
        #expect(checked >= 100)
    }

    @Test func theSchemaListsTheDecodersCurrencies() throws {
        let schema = try JSONValue.parse(Array(try Data(contentsOf: FailureCatalogueTests.root.appendingPathComponent("docs/schemas/job.schema.json"))))
        let listed = try #require(schema["properties"]?["amount"]?["properties"]?["currency"]?["enum"]?.arrayValue).compactMap(\.stringValue)
        #expect(listed == Currency.table.map(\.code))
        #expect(!listed.contains("XXX") && Currency.alpha3("XXX") == nil)
    }
}
