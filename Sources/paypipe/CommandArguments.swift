/// Minimal argument parsing for the CLI: positionals, `--flag`, `--option value` (repeatable).
/// Written here rather than fetched because no SwiftPM package can be used.
struct CommandArguments {
    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    private(set) var positionals: [String] = []
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Options that take no value; everything else starting with `--` consumes the next argument.
    static let knownFlags: Set<String> = ["--reveal", "--failed", "--json", "--all", "--dry-run", "--force"]

    init(_ arguments: [String]) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument.hasPrefix("--") {
                if let equals = argument.firstIndex(of: "=") {
                    options[String(argument[..<equals]), default: []].append(String(argument[argument.index(after: equals)...]))
                } else if Self.knownFlags.contains(argument) {
                    flags.insert(argument)
                } else {
                    guard index + 1 < arguments.count else { throw UsageError(description: "\(argument) needs a value") }
                    options[argument, default: []].append(arguments[index + 1])
                    index += 1
                }
            } else {
                positionals.append(argument)
            }
            index += 1
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    func values(_ name: String) -> [String] { options[name] ?? [] }

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
