import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Testing

/// The configuration catalogue against docs/configuration.md, against every `PAYPIPE_*` name in Sources/, and against
/// the defaults the readers use. Files and pure parsing only: no service.
@Suite struct ConfigurationCatalogueTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let documentPath = root.appendingPathComponent("docs/configuration.md").path
    static let tables: [(begin: String, end: String, variables: [ConfigurationVariable])] = [
        ("<!-- configuration-workers:begin (generated from ConfigurationCatalogue.production; do not edit) -->\n",
         "<!-- configuration-workers:end -->", ConfigurationCatalogue.production),
        ("<!-- configuration-tools:begin (generated from DevToolSettings.all; do not edit) -->\n",
         "<!-- configuration-tools:end -->", DevToolSettings.all),
    ]
    static var everything: [ConfigurationVariable] { ConfigurationCatalogue.production + DevToolSettings.all }

    /// Names in Sources/ that are not environment variables: the C shims' include guards and the fuzz build's
    /// compile-time condition (docs/configuration.md, "Not listed here").
    static func isNotAVariable(_ name: String) -> Bool {
        name.hasSuffix("_SHIM_H") || name == "PAYPIPE_FUZZ"
    }

    @Test func namesAreUniqueAndEntriesComplete() {
        let names = Self.everything.flatMap(\.allNames)
        #expect(Set(names).count == names.count, "a name is declared twice (or as another's old name)")
        for variable in Self.everything {
            #expect(variable.name.hasPrefix("PAYPIPE_") && variable.name.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" }, "\(variable.name)")
            #expect(!variable.readers.isEmpty && !variable.meaning.isEmpty && !variable.format.isEmpty && !variable.defaultText.isEmpty, "\(variable.name)")
            #expect(!variable.meaning.contains("|") && !variable.defaultText.contains("|"), "\(variable.name): a | breaks the table")
        }
    }

    /// docs/configuration.md shows the catalogue's tables verbatim. After changing a declaration, regenerate them with
    /// `PAYPIPE_WRITE_CONFIGURATION=1 scripts/test --filter ConfigurationCatalogueTests`.
    @Test func theDocumentIsTheCatalogue() throws {
        var text = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
        let write = ProcessInfo.processInfo.environment["PAYPIPE_WRITE_CONFIGURATION"] == "1"
        for table in Self.tables {
            let start = try #require(text.range(of: table.begin), "docs/configuration.md lost its marker \(table.begin)")
            let stop = try #require(text.range(of: table.end, range: start.upperBound..<text.endIndex), "docs/configuration.md lost its marker \(table.end)")
            let expected = ConfigurationReference.markdownTable(table.variables)
            if write {
                text = String(text[..<start.upperBound] + expected + text[stop.lowerBound...])
            } else {
                #expect(String(text[start.upperBound..<stop.lowerBound]) == expected, "docs/configuration.md differs from the declarations: regenerate it")
            }
        }
        if write { try text.write(toFile: Self.documentPath, atomically: true, encoding: .utf8) }
    }

    /// Every `PAYPIPE_*` name written anywhere in Sources/ (code, comments, help texts, C files) is a documented
    /// variable or old name: a new variable cannot be read without its entry.
    @Test func everyVariableInSourcesIsDocumented() throws {
        let documented = Set(Self.everything.flatMap(\.allNames))
        let name = try Regex(#"PAYPIPE_[A-Z0-9_]*[A-Z0-9]"#)
        let sources = Self.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
        var found: [String: String] = [:]   // name → first file
        for file in files where [".swift", ".c", ".h"].contains(where: file.hasSuffix) {
            let text = try String(contentsOfFile: sources.appendingPathComponent(file).path, encoding: .utf8)
            for match in text.matches(of: name) where found[String(text[match.range])] == nil {
                found[String(text[match.range])] = file
            }
        }
        #expect(found.count > 70, "the scan found \(found.count) names: is it reading Sources/?")
        for (variable, file) in found.sorted(by: { $0.key < $1.key }) where !Self.isNotAVariable(variable) {
            let isDocumented = documented.contains(variable)
            #expect(isDocumented, "\(variable) (Sources/\(file)) is not in docs/configuration.md: declare it")
        }
    }

    /// The defaults the workers use with nothing set are the documented ones, for the entries whose text is written
    /// by hand (the rest print the very value the reader uses).
    @Test func theHandWrittenDefaultsAreTheCodes() throws {
        let sandbox = EnvironmentReader(["PAYPIPE_ENV": "sandbox"])
        for stage in Stage.allCases {
            let configuration = try WorkerConfiguration(stage: stage, environment: sandbox)
            #expect(RuntimeSettings.metricsPort.variable.defaultText.contains("\(stage.rawValue) \(configuration.metricsPort)"))
            #expect(configuration.amqpURL == RuntimeSettings.amqpURL.defaultValue && configuration.databaseURL == RuntimeSettings.databaseURL.defaultValue)
        }
        let cli = try WorkerConfiguration(stage: nil, environment: sandbox)
        #expect(RuntimeSettings.metricsPort.variable.defaultText.contains("CLI: \(cli.metricsPort)"))
        #expect(RuntimeSettings.retryDelays.defaultText.contains("`\(NotifyStage.webhookRetryDelays)`"))
        let notifyDelays = try WorkerConfiguration(stage: .notify, environment: NotifyStage.workerEnvironment(sandbox)).retrySchedule.delays
        #expect(notifyDelays == RetrySchedule.parseDelays(NotifyStage.webhookRetryDelays))
        #expect(cli.retrySchedule.delays == RetrySchedule.standard.delays)
        #expect(RuntimeSettings.retryDelays.defaultText.hasPrefix("`1s,5s,30s,2m,10m`"))
        #expect(try NotifyStage.allowsPrivateTargets(.sandbox, environment: EnvironmentReader([:])))
        #expect(try !NotifyStage.allowsPrivateTargets(.production, environment: EnvironmentReader([:])))
        #expect(PaymentSettings.webhookAllowPrivate.variable.defaultText == "1 in sandbox, else 0")
        #expect(SubmitStage.minimumReconcileGrace == 2)
        // The submit reconciliation time `paypipe reconcile` checks (its help: 95s by default) from the declarations.
        #expect(try SubmitStage.reconciliationSeconds(EnvironmentReader([:])) == 95)
    }

    /// The gateway breaker's new names are read by both stages that call the gateway; the old names still work, and
    /// two names set to different values are refused (docs/configuration.md, "Names and old names").
    @Test(arguments: [("PAYPIPE_GATEWAY_BREAKER_FAILURES", "PAYPIPE_CIRCUIT_FAILURES"), ("PAYPIPE_GATEWAY_BREAKER_OPEN", "PAYPIPE_CIRCUIT_OPEN")])
    func theGatewayBreakerHasOneSchemeAndKeepsItsOldNames(new: String, old: String) throws {
        let base = ["PAYPIPE_ENV": "sandbox", "PAYPIPE_DATA_KEY": Data(repeating: 7, count: 32).base64EncodedString()]
        let logger = Logger(component: "test", threshold: .error)
        func problem(_ extra: [String: String]) throws -> ConfigurationError? {
            let environment = EnvironmentReader(base.merging(extra) { $1 })
            let configuration = try WorkerConfiguration(stage: .submit, environment: environment)
            var errors: [ConfigurationError] = []
            do { _ = try SubmitStage.fromEnvironment(configuration, logger: logger, environment: environment) } catch let error as ConfigurationError { errors.append(error) }
            do { _ = try OperationsWorker.fromEnvironment(configuration, logger: logger, environment: environment) } catch let error as ConfigurationError { errors.append(error) }
            #expect(errors.count != 1, "submit and operations read the breaker differently: \(errors)")
            return errors.first
        }
        #expect(try problem([:]) == nil)
        // Each name is read (an out-of-range value under it is refused, naming it).
        #expect(try problem([new: "-1"])?.variable == new)
        #expect(try problem([old: "-1"])?.variable == old)
        #expect(try problem([new: "7", old: "7"]) == nil)
        let conflict = try #require(try problem([new: "7", old: "8"]))
        #expect(conflict.variable == new && conflict.problem.contains(old))

        let setting = PaymentSettings.gatewayBreakerFailures
        #expect(try EnvironmentReader(["PAYPIPE_CIRCUIT_FAILURES": "9"]).read(setting) == 9)
        #expect(try EnvironmentReader(["PAYPIPE_GATEWAY_BREAKER_FAILURES": "9"]).read(setting) == 9)
        #expect(try EnvironmentReader(["PAYPIPE_GATEWAY_BREAKER_FAILURES": "9", "PAYPIPE_CIRCUIT_FAILURES": " "]).read(setting) == 9)
        #expect(try EnvironmentReader([:]).read(setting) == 5)
    }

    /// A worker's `--help` lists what that worker reads, and only that.
    @Test func aWorkersHelpListsItsVariables() {
        let submit = ConfigurationReference.workerHelp(stage: Stage.submit.name, variables: ConfigurationCatalogue.production)
        #expect(submit.contains("PAYPIPE_GATEWAY_BREAKER_FAILURES (old name: PAYPIPE_CIRCUIT_FAILURES)"))
        #expect(submit.contains("PAYPIPE_AMQP_URL") && submit.contains("PAYPIPE_DATA_KEY"))
        #expect(!submit.contains("PAYPIPE_WEBHOOK_TIMEOUT") && !submit.contains("PAYPIPE_SIM_"))
        let notify = ConfigurationReference.workerHelp(stage: Stage.notify.name, variables: ConfigurationCatalogue.production)
        #expect(notify.contains("PAYPIPE_WEBHOOK_BREAKER_OPEN") && !notify.contains("PAYPIPE_GATEWAY_BREAKER_OPEN"))
        for stage in Stage.allCases {
            let help = ConfigurationReference.workerHelp(stage: stage.name, variables: ConfigurationCatalogue.production)
            #expect(help.hasPrefix("Usage: paypipe-\(stage.rawValue) "))
            #expect(help.contains("PAYPIPE_MERCHANT_CACHE_TTL"), "every worker reads merchants: \(stage)")
        }
    }
}
