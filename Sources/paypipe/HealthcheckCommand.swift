import HTTP

/// `paypipe healthcheck URL`: for container health checks, since slim images carry no curl binary.
enum HealthcheckCommand: CLICommand {
    static let name = "healthcheck"
    static let summary = "exit 0 if URL answers 2xx (container health checks)"
    static let usage = """
        usage: paypipe healthcheck URL [--timeout SECONDS]
          GETs URL (e.g. http://127.0.0.1:9101/healthz) and exits 0 on a 2xx answer, 1 otherwise.
        """

    static let syntax = CommandSyntax(.init(operands: ["URL"], options: ["--timeout"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        let url = arguments.positionals[0]
        guard let timeout = Double(arguments.value("--timeout") ?? "3"), timeout > 0 else {
            return report(usage: .init(description: "--timeout needs a positive number of seconds"))
        }
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: timeout, totalTimeout: timeout))
        do {
            let response = try client.send(HTTPRequest(method: "GET", url: url))
            print("\(response.status) \(String(decoding: response.body, as: UTF8.self))")
            return (200..<300).contains(response.status) ? ExitCode.ok : ExitCode.failure
        } catch {
            printError("healthcheck failed: \(error)")
            return ExitCode.failure
        }
    }
}
