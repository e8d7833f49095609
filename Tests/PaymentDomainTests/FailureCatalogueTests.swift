import Foundation
import PaymentDomain
import Testing

/// The catalogue against its documentation and against the code that produces failure codes. Files only: no service.
@Suite struct FailureCatalogueTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let documentPath = root.appendingPathComponent("docs/failure-codes.md").path
    static let begin = "<!-- failure-codes:begin (generated from FailureCatalogue) -->\n"
    static let end = "<!-- failure-codes:end -->"

    /// The modules whose failure codes reach payments, dead letters and retries (development tools, the CLI's exit
    /// codes and the fuzz harness's outcomes are not part of the contract).
    static let producers = ["ApplePay", "PaymentDomain", "PaymentStages", "Pipeline"]

    @Test func codesAreUniqueAndSnakeCase() {
        let codes = FailureCatalogue.all.map(\.code)
        #expect(Set(codes).count == codes.count)
        for entry in FailureCatalogue.all {
            #expect(entry.code.allSatisfy { $0.isLowercase || $0.isNumber || "_<>".contains($0) }, "\(entry.code)")
            #expect(!entry.outcomes.isEmpty && !entry.meaning.isEmpty, "\(entry.code)")
        }
    }

    @Test func permanenceAndReportingFollowTheOutcomes() throws {
        let replayed = try #require(FailureCatalogue.entry(for: "token_replayed"))
        #expect(replayed.isPermanent && replayed.isReportedToMerchant)
        let malformed = try #require(FailureCatalogue.entry(for: "malformed_job"))
        #expect(malformed.isPermanent && !malformed.isReportedToMerchant)
        let conflict = try #require(FailureCatalogue.entry(for: "database_conflict"))
        #expect(!conflict.isPermanent && !conflict.isReportedToMerchant)
        let inconclusive = try #require(FailureCatalogue.entry(for: "reconciliation_inconclusive"))
        #expect(!inconclusive.isPermanent && inconclusive.isReportedToMerchant)
    }

    @Test func theGatewayFamilyMatchesNumericCodesOnly() {
        #expect(FailureCatalogue.entry(for: "gateway_70000")?.code == "gateway_<errorcode>")
        #expect(FailureCatalogue.entry(for: "gateway_unknown")?.code == "gateway_<errorcode>")
        #expect(FailureCatalogue.entry(for: "gateway_cancelled")?.code == "gateway_cancelled")
        #expect(FailureCatalogue.entry(for: "gateway_") == nil)
        #expect(FailureCatalogue.entry(for: "gateway_7x") == nil)
        #expect(FailureCatalogue.entry(for: "gateway_800.100.151")?.code == "gateway_<errorcode>")
        #expect(FailureCatalogue.entry(for: "gateway_800..151") == nil)
        #expect(FailureCatalogue.entry(for: "gateway_800.") == nil)
        #expect(FailureCatalogue.entry(for: "no_such_code") == nil)
    }

    /// docs/failure-codes.md shows the catalogue's table verbatim. After changing the catalogue, regenerate the page with
    /// `PAYPIPE_WRITE_FAILURE_CODES=1 scripts/test --filter FailureCatalogueTests`.
    @Test func theDocumentIsTheCatalogue() throws {
        let text = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
        let start = try #require(text.range(of: Self.begin), "docs/failure-codes.md lost its begin marker")
        let stop = try #require(text.range(of: Self.end, range: start.upperBound..<text.endIndex), "docs/failure-codes.md lost its end marker")
        let expected = FailureCatalogue.markdownTable()
        if ProcessInfo.processInfo.environment["PAYPIPE_WRITE_FAILURE_CODES"] == "1" {
            try (text[..<start.upperBound] + expected + text[stop.lowerBound...]).write(toFile: Self.documentPath, atomically: true, encoding: .utf8)
            return
        }
        #expect(String(text[start.upperBound..<stop.lowerBound]) == expected, "docs/failure-codes.md differs from FailureCatalogue")
    }

    /// Every code literal the producing modules write (`code: "…"`, `errorCode: "…"`, `reason = "…"`, and the `code`
    /// switches of the error enums) is catalogued, and every catalogued code is still written somewhere.
    @Test func theSourcesProduceExactlyTheCataloguedCodes() throws {
        // Purely numeric literals are the gateway's own codes (`errorCode: "0"`), which PayPipe reports as gateway_<errorcode>.
        let literal = try Regex(#"(?:\bcode|errorCode|reason)(?::| =) "([0-9]*[a-z][a-z0-9_]*)""#)
        let enumCase = try Regex(#"case \.[A-Za-z]+(?:\([^)]*\))?: "([0-9]*[a-z][a-z0-9_]*)""#)
        var written: [String: String] = [:]   // code → first file
        var sources = ""
        for module in Self.producers {
            let directory = Self.root.appendingPathComponent("Sources/\(module)")
            let files = try #require(FileManager.default.enumerator(atPath: directory.path)).compactMap { $0 as? String }
            for file in files where file.hasSuffix(".swift") {
                let text = try String(contentsOfFile: directory.appendingPathComponent(file).path, encoding: .utf8)
                sources += text
                let isErrorEnum = file.hasSuffix("Error.swift") || file.hasSuffix("StageFailure.swift")
                for match in text.matches(of: literal) + (isErrorEnum ? text.matches(of: enumCase) : []) {
                    if let code = match.output[1].substring, written[String(code)] == nil { written[String(code)] = "\(module)/\(file)" }
                }
            }
        }
        for (code, file) in written.sorted(by: { $0.key < $1.key }) {
            #expect(FailureCatalogue.entry(for: code) != nil, "\(code) (\(file)) is not in FailureCatalogue")
        }
        for entry in FailureCatalogue.all {
            let needle = entry.isFamily ? "\"\(entry.code.prefix { $0 != "<" })\\(" : "\"\(entry.code)\""
            #expect(sources.contains(needle), "\(entry.code) is catalogued but no producing module writes it")
        }
    }
}
