/// Parsed `--name value` options and `--flag` switches of a `paypipe token` subcommand. Options may repeat.
struct TokenCommandOptions {
    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []

    /// Parses `arguments`; names in `flagNames` take no value, every other `--name` takes exactly one.
    init(_ arguments: some Sequence<String>, flagNames: Set<String>, valueNames: Set<String>) throws(TokenCommandError) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard argument.hasPrefix("--") else { throw .usage("unexpected argument \(argument)") }
            let name = String(argument.dropFirst(2))
            if flagNames.contains(name) {
                flags.insert(name)
            } else if valueNames.contains(name) {
                guard let value = iterator.next() else { throw .usage("--\(name) needs a value") }
                values[name, default: []].append(value)
            } else {
                throw .usage("unknown option --\(name)")
            }
        }
    }

    func all(_ name: String) -> [String] { values[name] ?? [] }

    func optional(_ name: String) throws(TokenCommandError) -> String? {
        let given = all(name)
        guard given.count <= 1 else { throw .usage("--\(name) given more than once") }
        return given.first
    }

    func required(_ name: String) throws(TokenCommandError) -> String {
        guard let value = try optional(name) else { throw .usage("--\(name) is required") }
        return value
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }
}
