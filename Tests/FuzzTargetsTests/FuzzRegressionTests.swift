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
        let expectation = try #require(try Self.expectations()[file])
        let input = try Array(Data(contentsOf: Self.folder.appendingPathComponent(file)))
        let outcome = FuzzHarness.run(input)
        #expect(outcome.code == expectation.code, "\(file): \(outcome)")
        #expect(outcome.detail.contains(expectation.detail), "\(file): \(outcome)")
        #expect(!outcome.isOracleFailure)
    }

    @Test func selectorByteRoutesEveryValue() {
        #expect(FuzzSurface(selector: 0) == .job)
        #expect(FuzzSurface(selector: 3) == .cms)
        #expect(FuzzSurface(selector: 8) == .job)
        #expect(FuzzSurface(selector: 255) == .json)
        #expect(FuzzHarness.run([]).code == "job:empty_input")
    }
}
