import Foundation
import JSON
import PaymentStages
import Pipeline

/// `paypipe merchant apply|list|show`: merchant configuration as a document. Never prints secrets or keys.
enum MerchantCommand: CLICommand {
    static let name = "merchant"
    static let summary = "apply, list or show merchant configuration"
    static let usage = """
        usage: paypipe merchant apply --file merchant.json
               paypipe merchant list [--json]
               paypipe merchant show ID [--json]     (with `connector`: what its connector supports)
               paypipe merchant certs [--json]
               paypipe merchant keys [--usage] [--json]
          apply  validates the document (identities parsed, certificate and key must match) and upserts it;
                 secrets (JWT secret, Webservices password, webhook secret, private keys) are stored encrypted under the data key.
                 Relative file paths in the document are resolved against the document's folder; outside
                 PAYPIPE_ENV=sandbox every privateKeyFile, and the document itself when it holds secrets, must be
                 private to this user (chmod 600). The gateway baseUrl must be https:// outside sandbox; sandbox also
                 allows http:// to loopback and to the hosts in PAYPIPE_SANDBOX_PLAIN_HTTP_HOSTS.
          certs  every merchant's payment-processing certificates (identities[]) and merchant-identity certificate
                 (merchantIdentityCertificateFile) with their expiry and the days left (Apple certificates last
                 25 months; renew from 30 days before).
          keys   every merchant's payment-processing keys by publicKeyHash; --usage adds the tokens each decrypted
                 and when it was first and last used (from the decrypt workers, up to PAYPIPE_RECONCILE_INTERVAL
                 behind): an old key whose last use is older than your longest token age can be removed.
          list   the merchant ids, one a line; --json: one {"id"} object a line.
          show   always prints JSON (--json is accepted for symmetry with the other read commands).
          Workers pick changes up within PAYPIPE_MERCHANT_CACHE_TTL (5s). Output never contains secrets.
        """

    static let syntax = CommandSyntax(
        .init(["apply"], options: ["--file"]),
        .init(["list"], flags: ["--json"]),
        .init(["show"], operands: ["ID"], flags: ["--json"]),
        .init(["certs"], flags: ["--json"]),
        .init(["keys"], flags: ["--usage", "--json"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        if arguments.positionals.first == "apply", arguments.value("--file") == nil { return report(usage: .init(description: "missing --file")) }
        do {
            let environment = EnvironmentReader()
            let connection = try OperatorContext.database(environment)
            defer { connection.close() }
            let store = MerchantStore(vault: DataVault(keyring: try OperatorContext.dataKeyring(environment)))
            switch arguments.positionals.first {
            case "apply":
                let path = try arguments.required("--file")
                guard let data = FileManager.default.contents(atPath: path) else {
                    printError("paypipe: cannot read \(path)")
                    return ExitCode.dataError
                }
                let document: MerchantDocument
                do {
                    document = try JSONDecoder().decode(MerchantDocument.self, from: data)
                } catch {
                    printError("paypipe: \(path) is not a valid merchant document: \(error)")
                    return ExitCode.dataError
                }
                let base = URL(fileURLWithPath: path).deletingLastPathComponent()
                let deployment = try environment.choice("PAYPIPE_ENV", default: DeploymentEnvironment.production)
                if document.containsInlineSecrets {
                    try SecretFile.requirePrivate(path, variable: "--file (holds secrets)", deployment: deployment)
                }
                let merchant = try store.apply(
                    document, baseDirectory: base, deployment: deployment,
                    transport: .fromEnvironment(environment, deployment: deployment), on: connection)
                print(try summary(merchant))
            case "list":
                let ids = try store.listIds(on: connection)
                for id in ids { print(arguments.flag("--json") ? JSONValue.object([("id", .string(id))]).serializedString : id) }
            case "show":
                let id = try arguments.positional(1, "merchant id")
                guard let merchant = try store.load(id, on: connection) else {
                    printError("paypipe: no merchant \(id)")
                    return ExitCode.dataError
                }
                print(try summary(merchant))
            case "certs":
                print(try MerchantLifecycle.certificates(on: connection, json: arguments.flag("--json")), terminator: "")
            case "keys":
                print(try MerchantLifecycle.keys(on: connection, usage: arguments.flag("--usage"), json: arguments.flag("--json")), terminator: "")
            default:
                return report(usage: .init(description: "unknown action"))
            }
            return ExitCode.ok
        } catch let error as MerchantStore.MerchantError {
            printError("paypipe: \(error)")
            return ExitCode.dataError
        } catch {
            return OperatorContext.report(error)
        }
    }

    /// The merchant without secrets: only whether each secret is set.
    static func summary(_ merchant: Merchant) throws -> String {
        struct Summary: Encodable {
            let id: String
            let appleMerchantIdentifier: String?
            let identities: [[String: String]]
            let gateway: MerchantConfig.Gateway?
            let gatewaySecretSet: Bool
            let webhook: MerchantConfig.Webhook?
            let webhookSecretsSet: Int
            /// What the merchant's connector supports (``ConnectorKind/capabilities``): chaos runs plan operations by it.
            let connector: Connector?
            /// The broker users allowed to publish its jobs and operations; absent: any.
            let publishers: [String]?
            let updatedAt: Date
        }
        struct Connector: Encodable {
            let type: String
            let modes: [String]
            let capture: String
            let void: Bool
            let refund: String
            let reconciliationKey: String
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let summary = Summary(
            id: merchant.id, appleMerchantIdentifier: merchant.appleMerchantIdentifier,
            identities: merchant.config.identities.map { ["publicKeyHash": $0.publicKeyHash, "keyType": $0.keyType] },
            gateway: merchant.config.gateway, gatewaySecretSet: merchant.config.gateway.flatMap { merchant.secrets.connectorSecret(for: $0) } != nil,
            webhook: merchant.config.webhook, webhookSecretsSet: merchant.secrets.webhookSecrets.count,
            connector: merchant.config.gateway.map { gateway in
                let capabilities = gateway.connector.capabilities
                return Connector(type: gateway.connector.rawValue, modes: capabilities.modes.map(\.rawValue).sorted(), capture: capabilities.capture.rawValue,
                                 void: capabilities.void, refund: capabilities.refund.rawValue, reconciliationKey: capabilities.reconciliationKey)
            },
            publishers: merchant.config.publishers,
            updatedAt: merchant.updatedAt)
        return String(decoding: try encoder.encode(summary), as: UTF8.self)
    }
}
