import Foundation
import Pipeline

/// One `paypipe` subcommand.
protocol CLICommand {
    static var name: String { get }
    static var summary: String { get }
    /// Full `--help` text.
    static var usage: String { get }
    /// Every form the command accepts: the dispatcher parses against it before `run`, so a usage error is reported
    /// before any configuration is read or anything is published.
    static var syntax: CommandSyntax { get }
    /// Runs with the parsed arguments (the form's words first); returns the process exit code.
    static func run(_ arguments: CommandArguments) -> Int32
    /// Reports a usage error; returns the exit code (64).
    static func report(usage error: CommandArguments.UsageError) -> Int32
}

extension CLICommand {
    static func report(usage error: CommandArguments.UsageError) -> Int32 {
        printError("paypipe \(name): \(error)\n\n\(usage)")
        return ExitCode.usage
    }
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
        if arguments == ["--version"] {
            print(BuildInfo.current.versionLine(program: "paypipe"))
            return ExitCode.ok
        }
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
        let parsed: CommandArguments
        do {
            parsed = try command.syntax.parse(rest, command: command.name)
        } catch {
            return command.report(usage: error)
        }
        return command.run(parsed)
    }

    static func overview(_ commands: [any CLICommand.Type]) -> String {
        let table = TextTable(rows: commands.map { ["  " + $0.name, $0.summary] })
        return """
            usage: paypipe <command> [options]   (paypipe <command> --help for details)
                   paypipe --version

            commands:
            \(table.rendered(header: false))
            """
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
