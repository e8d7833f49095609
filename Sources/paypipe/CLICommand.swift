import Foundation

/// One `paypipe` subcommand.
protocol CLICommand {
    static var name: String { get }
    static var summary: String { get }
    /// Full `--help` text.
    static var usage: String { get }
    /// Runs with the arguments after the subcommand name; returns the process exit code.
    static func run(arguments: [String]) -> Int32
}

/// Exit codes, from BSD sysexits so scripts can tell usage, data and availability errors apart.
enum ExitCode {
    static let ok: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
    static let unavailable: Int32 = 69
    static let software: Int32 = 70
    static let configuration: Int32 = 78
}

enum CLI {
    static func dispatch(_ arguments: [String], commands: [any CLICommand.Type]) -> Int32 {
        guard let name = arguments.first, name != "--help", name != "-h", name != "help" else {
            print(overview(commands))
            return arguments.isEmpty ? ExitCode.usage : ExitCode.ok
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            printError("unknown command '\(name)'\n\n" + overview(commands))
            return ExitCode.usage
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            print(command.usage)
            return ExitCode.ok
        }
        return command.run(arguments: rest)
    }

    /// Parses a command's arguments, printing the usage on error.
    static func parse(_ arguments: [String], usage: String) -> CommandArguments? {
        do {
            return try CommandArguments(arguments)
        } catch {
            printError("\(error)\n\n\(usage)")
            return nil
        }
    }

    static func overview(_ commands: [any CLICommand.Type]) -> String {
        let width = commands.map { $0.name.count }.max() ?? 0
        let lines = commands.map { command in
            "  " + command.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + command.summary
        }
        return """
            usage: paypipe <command> [options]   (paypipe <command> --help for details)

            commands:
            \(lines.joined(separator: "\n"))
            """
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
