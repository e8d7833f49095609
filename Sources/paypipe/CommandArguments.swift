/// Argument parsing for the CLI: positionals, `--flag`, `--option value` / `--option=value`. Written here rather than
/// fetched because no SwiftPM package can be used.
///
/// Strict: a command declares its forms (``CommandSyntax``), and anything outside the chosen form — an unknown
/// `--name`, a flag given a value, a word too many, a repeat of an option not declared repeatable — is a usage error
/// before the command runs, so a typo (`--ammount`) fails loudly instead of being ignored.
struct CommandArguments {
    struct UsageError: Error, CustomStringConvertible {
        let description: String
        /// The `--name` that was not declared, when that is the error.
        var unknownOption: String? = nil
    }

    /// Every word that is not an option or an option's value, the form's leading words included.
    private(set) var positionals: [String] = []
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Parses `arguments` against one form: `--names` outside `flags` and `options` are refused, and so is a repeat of
    /// an option outside `repeatable`. Positionals are collected; ``CommandSyntax`` counts them.
    init(_ arguments: [String], flags flagNames: Set<String>, options optionNames: Set<String>, repeatable: Set<String> = []) throws(UsageError) {
        for argument in try Self.tokens(arguments, flags: flagNames, options: optionNames) {
            switch argument {
            case .positional(let word):
                positionals.append(word)
            case .flag(let name):
                flags.insert(name)
            case .option(let name, let value):
                if options[name] != nil, !repeatable.contains(name) { throw UsageError(description: "\(name) given more than once") }
                options[name, default: []].append(value)
            }
        }
    }

    enum Token: Equatable {
        case positional(String)
        case flag(String)
        case option(String, String)
    }

    /// Splits the arguments into words, flags and options with their values. "-" is a word (stdin); any other
    /// argument starting with "-" must be one of the declared names.
    static func tokens(_ arguments: [String], flags: Set<String>, options: Set<String>) throws(UsageError) -> [Token] {
        var tokens: [Token] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-"), argument != "-" else {
                tokens.append(.positional(argument))
                continue
            }
            let name = argument.firstIndex(of: "=").map { String(argument[..<$0]) } ?? argument
            let inline = argument.firstIndex(of: "=").map { String(argument[argument.index(after: $0)...]) }
            if flags.contains(name) {
                guard inline == nil else { throw UsageError(description: "\(name) takes no value") }
                tokens.append(.flag(name))
            } else if options.contains(name) {
                if let inline {
                    tokens.append(.option(name, inline))
                } else {
                    guard index < arguments.count else { throw UsageError(description: "\(name) needs a value") }
                    tokens.append(.option(name, arguments[index]))
                    index += 1
                }
            } else {
                throw UsageError(description: "unknown option \(name)", unknownOption: name)
            }
        }
        return tokens
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    func values(_ name: String) -> [String] { options[name] ?? [] }

    /// The value given for `name` (a single option is given at most once).
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

/// What a command accepts: one or more forms, each named by its leading words (`dlq list`, `webhooks endpoints
/// enable`; none for a command with a single form) and declaring its operands, flags and options.
struct CommandSyntax {
    struct Form {
        /// The literal words that select the form, after the command's name.
        let words: [String]
        /// The words that follow them, in order; a name in brackets (`[MESSAGE_ID]`) is optional and only trailing
        /// ones may be.
        let operands: [String]
        let flags: Set<String>
        let options: Set<String>
        let repeatable: Set<String>

        init(_ words: [String] = [], operands: [String] = [], flags: Set<String> = [], options: Set<String> = [], repeatable: Set<String> = []) {
            self.words = words
            self.operands = operands
            self.flags = flags
            self.options = options
            self.repeatable = repeatable
        }

        var title: String { words.joined(separator: " ") }
    }

    let forms: [Form]

    init(_ forms: Form...) {
        self.forms = forms
    }

    init(_ forms: [Form]) {
        self.forms = forms
    }

    /// Parses `arguments` (after the command's name) against the form their leading words select, the longest match
    /// winning. Throws a usage error that names the offending argument.
    func parse(_ arguments: [String], command: String) throws(CommandArguments.UsageError) -> CommandArguments {
        // The words are found with every form's names, so an option may come before the words that select its form.
        let words = try CommandArguments.tokens(arguments, flags: Set(forms.flatMap(\.flags)), options: Set(forms.flatMap(\.options)))
            .compactMap { token -> String? in if case .positional(let word) = token { word } else { nil } }
        let matching = forms.filter { $0.words.count <= words.count && Array(words.prefix($0.words.count)) == $0.words }
        guard let form = matching.max(by: { $0.words.count < $1.words.count }) else {
            let choices = Array(Set(forms.compactMap(\.words.first))).sorted().joined(separator: ", ")
            throw .init(description: words.first.map { "unknown action '\($0)' (one of \(choices))" } ?? "missing action (one of \(choices))")
        }
        let parsed: CommandArguments
        do {
            parsed = try CommandArguments(arguments, flags: form.flags, options: form.options, repeatable: form.repeatable)
        } catch {
            // An option of another form: say which form it was given to.
            guard let name = error.unknownOption, forms.contains(where: { $0.flags.contains(name) || $0.options.contains(name) }) else { throw error }
            throw .init(description: "\(name) is not an option of paypipe \(command) \(form.title)", unknownOption: name)
        }
        let operands = parsed.positionals.dropFirst(form.words.count)
        let required = form.operands.filter { !$0.hasPrefix("[") }
        if operands.count < required.count { throw .init(description: "missing \(required[operands.count])") }
        if operands.count > form.operands.count {
            throw .init(description: "unexpected argument '\(operands[operands.startIndex + form.operands.count])'")
        }
        return parsed
    }
}
