/// Minimal argument parsing for the CLI: positionals, `--flag`, `--option value` / `--option=value` (repeatable).
/// Written here rather than fetched because no SwiftPM package can be used.
///
/// Lenient by default (any `--name` not in `flags` takes a value, bare words are positionals), which is what the
/// operational commands use. A command that declares its `options` gets strict parsing instead: an unknown
/// `--name` or a bare word is a usage error, so a typo (`--merchant-crt`) fails loudly rather than being ignored.
struct CommandArguments {
    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    private(set) var positionals: [String] = []
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Options that take no value; everything else starting with `--` consumes the next argument.
    static let knownFlags: Set<String> = ["--reveal", "--failed", "--json", "--all", "--dry-run", "--force"]

    /// - Parameters:
    ///   - flags: the `--names` that take no value.
    ///   - options: when given, the only `--names` that take a value; any other `--name` and any positional
    ///     argument is then a usage error.
    init(_ arguments: [String], flags flagNames: Set<String> = knownFlags, options optionNames: Set<String>? = nil)
        throws(UsageError)
    {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument.hasPrefix("--") {
                if let equals = argument.firstIndex(of: "=") {
                    let name = String(argument[..<equals])
                    try Self.check(name, isIn: optionNames)
                    options[name, default: []].append(String(argument[argument.index(after: equals)...]))
                } else if flagNames.contains(argument) {
                    flags.insert(argument)
                } else {
                    try Self.check(argument, isIn: optionNames)
                    guard index + 1 < arguments.count else { throw UsageError(description: "\(argument) needs a value") }
                    options[argument, default: []].append(arguments[index + 1])
                    index += 1
                }
            } else {
                guard optionNames == nil else { throw UsageError(description: "unexpected argument \(argument)") }
                positionals.append(argument)
            }
            index += 1
        }
    }

    private static func check(_ name: String, isIn optionNames: Set<String>?) throws(UsageError) {
        guard let optionNames, !optionNames.contains(name) else { return }
        throw UsageError(description: "unknown option \(name)")
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    func values(_ name: String) -> [String] { options[name] ?? [] }

    /// The last value given for `name` (a later option overrides an earlier one).
    func value(_ name: String) -> String? { options[name]?.last }

    /// The value of an option that may be given at most once, so that conflicting values are an error rather
    /// than a silent choice.
    func single(_ name: String) throws(UsageError) -> String? {
        let given = values(name)
        guard given.count <= 1 else { throw UsageError(description: "\(name) given more than once") }
        return given.first
    }

    /// `single(name)`, which must be present.
    func required(_ name: String) throws(UsageError) -> String {
        guard let value = try single(name) else { throw UsageError(description: "missing \(name)") }
        return value
    }

    func positional(_ index: Int, _ what: String) throws(UsageError) -> String {
        guard index < positionals.count else { throw UsageError(description: "missing \(what)") }
        return positionals[index]
    }
}
