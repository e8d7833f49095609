import Foundation
import PaymentStages
import PayPipeDevTools

/// `paypipe sandbox init --dir DIR`: the test PKI, a data key and a merchant document for local runs.
enum SandboxCommand: CLICommand {
    static let name = "sandbox"
    static let summary = "create the sandbox PKI, data key and merchant documents (local runs)"
    static let usage = """
        usage: paypipe sandbox init [--dir DIR] [--gateway-url URL] [--webhook-url URL]
          Creates (once; later calls reuse it) in DIR (default PAYPIPE_SANDBOX_DIR or var/sandbox):
            pki/        a test root, an intermediate and leaves carrying Apple's OIDs, merchant identities
            data.key    a random data-encryption key (mode 0600) for PAYPIPE_DATA_KEY_FILE
            merchant.json  the sandbox merchant document for `paypipe merchant apply`; its gateway is the
                        simulator (--gateway-url, default http://127.0.0.1:9180) and its webhook the receiver
                        (--webhook-url, default http://127.0.0.1:9190/webhooks); a URL given again later
                        replaces the one in the existing document (its secrets and keys are kept); its
                        gateway transport is webservices (/json/, HTTP Basic)
            merchant-jwt.json  a second merchant (sandbox-merchant-jwt), the same identities and webhook, on the
                        jwt transport (/jwt/)
        \(SandboxEnvironment.connectorDocumentsUsage)
          Workers accept the sandbox root only when PAYPIPE_APPLEPAY_TRUST_ROOT names it.
          Prints the paths as JSON.
        """

    static let syntax = CommandSyntax(.init(["init"], options: ["--dir", "--gateway-url", "--webhook-url"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        let directory = arguments.value("--dir") ?? OperatorContext.sandboxDirectory
        do {
            let endpoints = SandboxEnvironment.Endpoints(gatewayURL: arguments.value("--gateway-url"), webhookURL: arguments.value("--webhook-url"))
            let sandbox = try SandboxEnvironment.open(directory: directory, endpoints: endpoints)
            print(sandbox.pathsJSON)
            return ExitCode.ok
        } catch {
            return OperatorContext.report(error)
        }
    }
}
