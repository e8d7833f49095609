/// Minimal argument parsing for the CLI: positionals, `--flag`, `--option value` / `--option=value` (repeatable).
/// Written here rather than fetched because no SwiftPM package can be used.
///
/// Lenient by default (any `--name` not in `flags` takes a value and may repeat, bare words are positionals), which
/// is what the operational commands use. A command that declares its `options` gets strict parsing instead: an
/// unknown `--name`, a bare word, or a repeat of an option not declared `repeatable` is a usage error, so a typo
/// (`--merchant-crt`) or two conflicting values fail loudly rather than being ignored or silently chosen.
struct CommandArguments {
    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    private(set) var positionals: [String] = []
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Options that take no value; everything else starting with `--` consumes the next argument.
    static let knownFlags: Set<String> = ["--reveal", "--failed", "--json", "--all", "--dry-run", "--force", "--status", "--all-good", "--usage", "--disabled"]

    /// - Parameters:
    ///   - flags: the `--names` that take no value.
    ///   - options: when given, the only `--names` that take a value; any other `--name`, any positional argument
    ///     and any repeat of an option outside `repeatable` is then a usage error.
    ///   - repeatable: the declared options that may be given more than once (read them with `values(_:)`).
    init(
        _ arguments: [String], flags flagNames: Set<String> = knownFlags, options optionNames: Set<String>? = nil,
        repeatable: Set<String> = []
    ) throws(UsageError) {
        /// Records one option value (nil: the arguments ended), enforcing the declared options when there are any.
        func add(_ name: String, _ value: String?, to options: inout [String: [String]]) throws(UsageError) {
            if let optionNames, !optionNames.contains(name) { throw UsageError(description: "unknown option \(name)") }
            guard let value else { throw UsageError(description: "\(name) needs a value") }
            if optionNames != nil, options[name] != nil, !repeatable.contains(name) {
                throw UsageError(description: "\(name) given more than once")
            }
            options[name, default: []].append(value)
        }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument.hasPrefix("--") {
                if let equals = argument.firstIndex(of: "=") {
                    try add(String(argument[..<equals]), String(argument[argument.index(after: equals)...]), to: &options)
                } else if flagNames.contains(argument) {
                    flags.insert(argument)
                } else {
                    try add(argument, index + 1 < arguments.count ? arguments[index + 1] : nil, to: &options)
                    index += 1
                }
            } else {
                guard optionNames == nil else { throw UsageError(description: "unexpected argument \(argument)") }
                positionals.append(argument)
            }
            index += 1
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    func values(_ name: String) -> [String] { options[name] ?? [] }

    /// The last value given for `name` (in lenient parsing a later option overrides an earlier one).
    func value(_ name: String) -> String? { options[name]?.last }

    func required(_ name: String) throws(UsageError) -> String {
        guard let value = value(name) else { throw UsageError(description: "missing \(name)") }
        return value
    }

    func positional(_ index: Int, _ what: String) throws(UsageError) -> String {
        guard index < positionals.count else { throw UsageError(description: "missing \(what)") }
        return positionals[index]
    }
}
