import Testing
@testable import WorkerRuntime

/// The declarations' reading rules (defaults, ranges, old names) and a worker's argument rule. Pure.
@Suite struct ConfigurationSettingTests {
    static let renamed = IntegerSetting<Int>("PAYPIPE_NEW", readers: [.everyWorker], default: 3, range: 1...10, aliases: ["PAYPIPE_OLD"], "test")

    @Test func aSettingReadsItsDefaultAndRange() throws {
        #expect(try EnvironmentReader([:]).read(Self.renamed) == 3)
        #expect(try EnvironmentReader(["PAYPIPE_NEW": ""]).read(Self.renamed) == 3)
        #expect(try EnvironmentReader(["PAYPIPE_NEW": "4"]).read(Self.renamed, default: 9) == 4)
        #expect(try EnvironmentReader([:]).read(Self.renamed, default: 9) == 9)
        #expect(throws: ConfigurationError(variable: "PAYPIPE_NEW", problem: "expected an integer in 1...10, got '11'")) {
            try EnvironmentReader(["PAYPIPE_NEW": "11"]).read(Self.renamed)
        }
        #expect(Self.renamed.variable.format == "integer 1…10" && Self.renamed.variable.defaultText == "3")
    }

    /// The old name is read when the new one is unset; both set must agree, or the error names both.
    @Test func anOldNameIsAnAlias() throws {
        #expect(try EnvironmentReader(["PAYPIPE_OLD": "6"]).read(Self.renamed) == 6)
        #expect(try EnvironmentReader(["PAYPIPE_NEW": "6", "PAYPIPE_OLD": "6"]).read(Self.renamed) == 6)
        #expect(throws: ConfigurationError.self) { try EnvironmentReader(["PAYPIPE_OLD": "0"]).read(Self.renamed) }
        do {
            _ = try EnvironmentReader(["PAYPIPE_NEW": "6", "PAYPIPE_OLD": "7"]).read(Self.renamed)
            Issue.record("a conflict was accepted")
        } catch {
            #expect(error.variable == "PAYPIPE_NEW" && error.problem.contains("PAYPIPE_OLD") && error.problem.contains("set only PAYPIPE_NEW"))
        }
        #expect(try EnvironmentReader(["PAYPIPE_OLD": "6"]).effectiveName(Self.renamed.variable) == "PAYPIPE_OLD")
        #expect(try EnvironmentReader([:]).effectiveName(Self.renamed.variable) == "PAYPIPE_NEW")
    }

    @Test func durationsAreWrittenAsTheDocsWriteThem() {
        #expect([0, 0.01, 0.1, 0.2, 1, 5, 30, 60, 300, 600, 6 * 3600, 86_400, 5 * 86_400, 90].map(DurationParser.text)
            == ["0s", "10ms", "100ms", "200ms", "1s", "5s", "30s", "1m", "5m", "10m", "6h", "1d", "5d", "90s"])
        for seconds in [0.01, 30, 300, 6 * 3600.0, 1.5] {
            #expect(DurationParser.seconds(DurationParser.text(seconds)) == seconds)
        }
    }

    /// A worker takes no argument but `--help` (its variables) and `--version` (answered by the version check).
    @Test func aWorkersArguments() {
        #expect(WorkerArguments.decide([]) == .start)
        #expect(WorkerArguments.decide(["--help"]) == .help)
        #expect(WorkerArguments.decide(["--version"]) == .version)
        #expect(WorkerArguments.decide(["--version", "--help"]) == .help)
        #expect(WorkerArguments.decide(["--bogus"]) == .unknown("--bogus"))
        #expect(WorkerArguments.decide(["--help", "-h"]) == .unknown("-h"))
        #expect(WorkerArguments.decide(["start"]) == .unknown("start"))
        #expect(WorkerArguments.decide([""]) == .unknown(""))
    }

    @Test func theHelpListsTheStagesVariables() {
        let only = ConfigurationVariable("PAYPIPE_ONLY_B", readers: [.worker(StageName("b"))], default: "unset", format: "text", "b's")
        let help = ConfigurationReference.workerHelp(stage: StageName("a"), variables: [Self.renamed.variable, only])
        #expect(help.hasPrefix("Usage: paypipe-a [--help | --version]"))
        #expect(help.contains("PAYPIPE_NEW (old name: PAYPIPE_OLD)\n      integer 1…10; default 3\n      test\n"))
        #expect(!help.contains("PAYPIPE_ONLY_B"))
    }
}
