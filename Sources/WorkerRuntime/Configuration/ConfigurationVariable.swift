import Foundation

/// Who reads a variable: the workers (all, or one stage's), the operator CLI `paypipe`, or a development tool.
public enum ConfigurationReader: Hashable, Sendable {
    case everyWorker
    case worker(StageName)
    case cli
    /// A development or benchmark executable, by its name (`paypipe-gateway-sim`, `pg-bench`).
    case tool(String)

    public var label: String {
        switch self {
        case .everyWorker: "every worker"
        case .worker(let stage): "paypipe-\(stage.rawValue)"
        case .cli: "paypipe"
        case .tool(let executable): executable
        }
    }
}

/// One documented `PAYPIPE_*` variable: the entry of docs/configuration.md and of a worker's `--help`. Declared once,
/// next to the module that reads it; the typed settings below carry the default and range the readers use, so the
/// documentation cannot drift from the code.
public struct ConfigurationVariable: Sendable, Hashable {
    public let name: String
    public let readers: [ConfigurationReader]
    /// The default as documented ("unset" when there is none).
    public let defaultText: String
    /// What a value looks like: "integer 1…5000", "duration 0s…1s", "URL amqp(s)://…".
    public let format: String
    public let meaning: String
    /// Older names still read (an addition never removes a name). Setting two of them to different values is a
    /// configuration error, so an operator never edits a name that is silently overridden.
    public let aliases: [String]

    public init(_ name: String, readers: [ConfigurationReader], default defaultText: String, format: String,
                aliases: [String] = [], _ meaning: String) {
        self.name = name
        self.readers = readers
        self.defaultText = defaultText
        self.format = format
        self.aliases = aliases
        self.meaning = meaning
    }

    /// Whether the worker of `stage` reads it (its `--help` lists it).
    public func isRead(by stage: StageName) -> Bool {
        readers.contains { $0 == .everyWorker || $0 == .worker(stage) }
    }

    /// The name and its aliases.
    public var allNames: [String] { [name] + aliases }
}

/// A variable with a typed default and range: the declaration the reader reads through.
public protocol ConfigurationSetting: Sendable {
    var variable: ConfigurationVariable { get }
}

extension ConfigurationVariable: ConfigurationSetting {
    public var variable: ConfigurationVariable { self }
}

/// An integer variable.
public struct IntegerSetting<Value: FixedWidthInteger & Sendable>: ConfigurationSetting {
    public let variable: ConfigurationVariable
    public let defaultValue: Value
    public let range: ClosedRange<Value>

    /// - Parameter defaultText: when the default depends on something else (the stage); else `defaultValue`.
    public init(_ name: String, readers: [ConfigurationReader], default defaultValue: Value, range: ClosedRange<Value>,
                defaultText: String? = nil, aliases: [String] = [], _ meaning: String) {
        self.defaultValue = defaultValue
        self.range = range
        variable = ConfigurationVariable(name, readers: readers, default: defaultText ?? "\(defaultValue)",
                                         format: "integer \(range.lowerBound)…\(range.upperBound)", aliases: aliases, meaning)
    }
}

/// A duration variable (`250ms`, `5s`, `2m`, `1h`, `5d` or plain seconds), in seconds.
public struct DurationSetting: ConfigurationSetting {
    public let variable: ConfigurationVariable
    public let defaultValue: Double
    public let range: ClosedRange<Double>

    public init(_ name: String, readers: [ConfigurationReader], default defaultValue: Double, range: ClosedRange<Double>,
                defaultText: String? = nil, aliases: [String] = [], _ meaning: String) {
        self.defaultValue = defaultValue
        self.range = range
        variable = ConfigurationVariable(
            name, readers: readers, default: defaultText ?? DurationParser.text(defaultValue),
            format: "duration \(DurationParser.text(range.lowerBound))…\(DurationParser.text(range.upperBound))", aliases: aliases, meaning)
    }
}

/// A decimal variable (a rate, a factor).
public struct DecimalSetting: ConfigurationSetting {
    public let variable: ConfigurationVariable
    public let defaultValue: Double
    public let range: ClosedRange<Double>

    public init(_ name: String, readers: [ConfigurationReader], default defaultValue: Double, range: ClosedRange<Double>,
                defaultText: String? = nil, _ meaning: String) {
        self.defaultValue = defaultValue
        self.range = range
        variable = ConfigurationVariable(name, readers: readers, default: defaultText ?? DurationParser.number(defaultValue),
                                         format: "number \(DurationParser.number(range.lowerBound))…\(DurationParser.number(range.upperBound))", meaning)
    }
}

/// A 1/0 switch (also true/false, yes/no, on/off).
public struct FlagSetting: ConfigurationSetting {
    public let variable: ConfigurationVariable
    public let defaultValue: Bool

    public init(_ name: String, readers: [ConfigurationReader], default defaultValue: Bool, defaultText: String? = nil, _ meaning: String) {
        self.defaultValue = defaultValue
        variable = ConfigurationVariable(name, readers: readers, default: defaultText ?? (defaultValue ? "1" : "0"), format: "flag 1/0", meaning)
    }
}

/// A text variable with a default (a URL, a host, a directory).
public struct TextSetting: ConfigurationSetting {
    public let variable: ConfigurationVariable
    public let defaultValue: String

    public init(_ name: String, readers: [ConfigurationReader], default defaultValue: String, defaultText: String? = nil,
                format: String, _ meaning: String) {
        self.defaultValue = defaultValue
        variable = ConfigurationVariable(name, readers: readers, default: defaultText ?? "`\(defaultValue)`", format: format, meaning)
    }
}

/// One of a fixed set of words (an enum's raw values).
public struct ChoiceSetting<Value: RawRepresentable & CaseIterable & Sendable>: ConfigurationSetting where Value.RawValue == String {
    public let variable: ConfigurationVariable
    public let defaultValue: Value

    public init(_ name: String, readers: [ConfigurationReader], default defaultValue: Value, _ meaning: String) {
        self.defaultValue = defaultValue
        variable = ConfigurationVariable(name, readers: readers, default: "`\(defaultValue.rawValue)`",
                                         format: Value.allCases.map(\.rawValue).joined(separator: ", "), meaning)
    }
}

extension EnvironmentReader {
    /// The name whose value counts: the variable's own when set, else the one alias that is set. Two names set to
    /// different values are refused, naming both.
    public func effectiveName(_ variable: ConfigurationVariable) throws(ConfigurationError) -> String {
        let set = variable.allNames.filter { raw($0) != nil }
        guard let first = set.first else { return variable.name }
        if let other = set.dropFirst().first(where: { raw($0) != raw(first) }) {
            throw ConfigurationError(variable: variable.name, problem: "\(first) and \(other) name the same setting (old names are "
                + "aliases) and are set to different values: set only \(variable.name)")
        }
        return first
    }

    public func raw(_ setting: some ConfigurationSetting) throws(ConfigurationError) -> String? {
        raw(try effectiveName(setting.variable))
    }

    public func read<Value>(_ setting: IntegerSetting<Value>, default override: Value? = nil) throws(ConfigurationError) -> Value {
        try integer(try effectiveName(setting.variable), default: override ?? setting.defaultValue, range: setting.range)
    }

    public func read(_ setting: DurationSetting) throws(ConfigurationError) -> Double {
        try seconds(try effectiveName(setting.variable), default: setting.defaultValue, range: setting.range)
    }

    /// With a lower bound the caller imposes beyond the declared range (a minimum derived from other settings).
    public func read(_ setting: DurationSetting, atLeast minimum: Double) throws(ConfigurationError) -> Double {
        try seconds(try effectiveName(setting.variable), default: setting.defaultValue, range: max(minimum, setting.range.lowerBound)...setting.range.upperBound)
    }

    public func read(_ setting: DecimalSetting) throws(ConfigurationError) -> Double {
        try double(try effectiveName(setting.variable), default: setting.defaultValue, range: setting.range)
    }

    /// - Parameter override: a default decided at run time (e.g. on in sandbox), documented in the declaration's text.
    public func read(_ setting: FlagSetting, default override: Bool? = nil) throws(ConfigurationError) -> Bool {
        try flag(try effectiveName(setting.variable), default: override ?? setting.defaultValue)
    }

    public func read(_ setting: TextSetting) throws(ConfigurationError) -> String {
        string(try effectiveName(setting.variable), default: setting.defaultValue)
    }

    public func read<Value>(_ setting: ChoiceSetting<Value>) throws(ConfigurationError) -> Value {
        try choice(try effectiveName(setting.variable), default: setting.defaultValue)
    }
}

extension DurationParser {
    /// `seconds` as the docs write it: `10ms`, `30s`, `5m`, `6h`, `5d`.
    public static func text(_ seconds: Double) -> String {
        if seconds == 0 { return "0s" }
        if seconds < 1, (seconds * 1000).rounded() == seconds * 1000 { return "\(Int(seconds * 1000))ms" }
        for (factor, unit) in [(86_400.0, "d"), (3600, "h"), (60, "m")] where seconds >= factor && seconds.truncatingRemainder(dividingBy: factor) == 0 {
            return "\(Int(seconds / factor))\(unit)"
        }
        return "\(number(seconds))s"
    }

    /// A number without a trailing `.0`.
    public static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? "\(Int(value))" : "\(value)"
    }
}

/// The renderings of a catalogue: docs/configuration.md's tables and a worker's `--help`.
public enum ConfigurationReference {
    /// A markdown table, one row per variable, in the order given.
    public static func markdownTable(_ variables: [ConfigurationVariable]) -> String {
        var lines = ["| variable | read by | default | format | meaning |", "|---|---|---|---|---|"]
        for variable in variables {
            let names = "`\(variable.name)`" + (variable.aliases.isEmpty ? "" : " (old name: " + variable.aliases.map { "`\($0)`" }.joined(separator: ", ") + ")")
            lines.append("| \(names) | \(variable.readers.map(\.label).joined(separator: ", ")) | \(variable.defaultText) | "
                + "\(variable.format) | \(variable.meaning) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A worker's `--help`: how it is run, then every variable it reads.
    public static func workerHelp(stage: StageName, variables: [ConfigurationVariable]) -> String {
        var text = """
            Usage: paypipe-\(stage.rawValue) [--help | --version]
            Consumes \(stage.queueName) until SIGTERM. Takes no arguments: it is configured by these environment variables
            (docs/configuration.md). Exit codes: 0 stopped cleanly, 1 in-flight work did not drain, 64 usage,
            69 could not start, 78 invalid configuration.

            """
        func plain(_ markdown: String) -> String { markdown.replacingOccurrences(of: "`", with: "") }
        for variable in variables where variable.isRead(by: stage) {
            let aliases = variable.aliases.isEmpty ? "" : " (old name: \(variable.aliases.joined(separator: ", ")))"
            text += "\n  \(variable.name)\(aliases)\n      \(plain(variable.format)); default \(plain(variable.defaultText))\n"
            text += "      \(plain(variable.meaning))\n"
        }
        return text
    }
}
