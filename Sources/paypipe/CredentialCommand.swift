import Crypto
import Foundation
import JSON
import PaymentStages
import Pipeline
import Postgres

/// `paypipe credential list|show`: the stored credentials of a merchant (docs/recurring.md). Never opens the sealed
/// references: what is shown is what the `credentials` table holds in clear.
enum CredentialCommand: CLICommand {
    static let name = "credential"
    static let summary = "list, show and unlink a merchant's stored credentials (recurring payments)"
    static let usage = """
        usage: paypipe credential list --merchant ID [--state active|unlinked|expired] [--limit N] [--json]
               paypipe credential show CREDENTIAL_ID --merchant ID [--json]
               paypipe credential unlink CREDENTIAL_ID --merchant ID [--reason TEXT] [--json]
          list   the merchant's credentials, newest first (at most --limit, default 100): id, state, usage, token type,
                 network, last four digits, expiry, connector, created; --json: one object a line.
          show   one credential as JSON (always; --json is accepted for symmetry), with its storing payment, Apple's
                 merchantTokenIdentifier and card metadata, and whether its sealed references were shredded.
                 Exit 65 if the merchant has no such credential (another merchant's reads the same).
          unlink a merchant-initiated unlink: for a merchant token (MPAN), Apple's unlink API first, over mutual TLS with
                 the merchant's identity (PAYPIPE_APPLE_IDENTITY_DIRECTORY, PAYPIPE_APPLE_TOKEN_API_URL,
                 PAYPIPE_APPLE_TOKEN_API_CA_FILE); then the credential is unlinked and its sealed references shredded,
                 exactly once. A credential already unlinked or expired: nothing is called, it says so (exit 0).
                 Exit 65 if the merchant has no such credential; 69 if Apple could not be told (it stays active).
          All read PAYPIPE_DATABASE_URL only: the sealed references are never opened, so no data key is needed.
        """

    static let syntax = CommandSyntax(
        .init(["list"], flags: ["--json"], options: ["--merchant", "--state", "--limit"]),
        .init(["show"], operands: ["CREDENTIAL_ID"], flags: ["--json"], options: ["--merchant"]),
        .init(["unlink"], operands: ["CREDENTIAL_ID"], flags: ["--json"], options: ["--merchant", "--reason"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        do {
            guard let merchant = arguments.value("--merchant") else { throw CommandArguments.UsageError(description: "--merchant ID is required") }
            var state: CredentialState?
            if let text = arguments.value("--state") {
                guard let parsed = CredentialState(rawValue: text) else {
                    throw CommandArguments.UsageError(description: "--state must be active, unlinked or expired")
                }
                state = parsed
            }
            var limit = 100
            if let text = arguments.value("--limit") {
                guard let parsed = Int(text), (1...10_000).contains(parsed) else {
                    throw CommandArguments.UsageError(description: "--limit must be a whole number from 1 to 10000")
                }
                limit = parsed
            }
            // list and show never open the sealed references, so they need no data key: the store's vault is a throwaway
            // one that could not open them anyway.
            let store = CredentialStore(vault: DataVault(keyring: DataKeyring(current: try DataKey(bytes: SecureRandom.bytes(count: 32)))))
            let connection = try OperatorContext.database()
            defer { connection.close() }
            if arguments.positionals[0] == "unlink" {
                return try unlink(try arguments.positional(1, "credential id"), merchant: merchant, arguments, store: store, on: connection)
            }
            if arguments.positionals[0] == "show" {
                guard let credential = try store.find(try arguments.positional(1, "credential id"), merchantId: merchant, on: connection) else {
                    printError("paypipe: merchant \(merchant) has no such credential")
                    return ExitCode.dataError
                }
                print(json(credential, detailed: true).serializedString)
                return ExitCode.ok
            }
            let credentials = try store.list(merchantId: merchant, state: state, limit: limit, on: connection)
            if arguments.flag("--json") {
                for credential in credentials { print(json(credential, detailed: false).serializedString) }
            } else {
                print(TextTable(
                    header: ["ID", "STATE", "USAGE", "TOKEN", "NETWORK", "LAST4", "EXPIRY", "CONNECTOR", "CREATED"],
                    rows: credentials.map { credential in
                        [credential.id, credential.state.rawValue, credential.usage.rawValue, credential.tokenType.rawValue,
                         credential.network ?? "-", credential.last4 ?? "-", credential.expiry?.description ?? "-", credential.connector,
                         Logger.timestamp(credential.createdAt)]
                    }).rendered(), terminator: "")
            }
            return ExitCode.ok
        } catch {
            return OperatorContext.report(error)
        }
    }

    /// `unlink`: Apple first for an MPAN (MerchantTokenUnlink), then the credential, exactly once.
    static func unlink(_ id: String, merchant: String, _ arguments: CommandArguments, store: CredentialStore,
                       on connection: PostgresConnection) throws -> Int32 {
        let environment = EnvironmentReader()
        let identity = environment.raw(MerchantTokenSettings.identityDirectory.name)
            .flatMap { AppleTokenAPIIdentity.fromDirectory($0, merchantId: merchant) }
        let result: MerchantTokenUnlink.Result
        do {
            result = try MerchantTokenUnlink.unlink(
                id, merchantId: merchant, reason: arguments.value("--reason") ?? "merchant-initiated unlink", credentials: store,
                identity: identity, baseURL: try environment.read(MerchantTokenSettings.tokenAPIURL),
                caCertificatePath: environment.raw(MerchantTokenSettings.tokenAPICAFile.name), on: connection)
        } catch let failure as MerchantTokenUnlink.Failure {
            printError("paypipe: \(failure)")
            return ExitCode.unavailable
        }
        let (outcome, text): (String, String)
        switch result {
        case .notFound:
            printError("paypipe: merchant \(merchant) has no such credential")
            return ExitCode.dataError
        case .unlinked(let appleCalled):
            (outcome, text) = ("unlinked", "credential \(id) unlinked" + (appleCalled ? " (Apple's merchant token unlinked first)" : ""))
        case .alreadyInactive(let state):
            (outcome, text) = ("unchanged", "credential \(id) was already \(state.rawValue): nothing done")
        }
        if arguments.flag("--json") {
            let json: JSONValue = ["credentialId": .string(id), "merchantId": .string(merchant), "outcome": .string(outcome)]
            print(json.serializedString)
        } else {
            print(text)
        }
        return ExitCode.ok
    }

    /// The credential as the CLI prints it: what the table holds in clear, never the sealed references.
    static func json(_ credential: CredentialStore.Credential, detailed: Bool) -> JSONValue {
        func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        var members: [(key: String, value: JSONValue)] = [
            ("id", .string(credential.id)), ("merchantId", .string(credential.merchantId)), ("state", .string(credential.state.rawValue)),
            ("usage", .string(credential.usage.rawValue)), ("tokenType", .string(credential.tokenType.rawValue)),
            ("network", optional(credential.network)), ("last4", optional(credential.last4)), ("expiry", optional(credential.expiry?.description)),
            ("connector", .string(credential.connector)), ("createdAt", .string(Logger.timestamp(credential.createdAt))),
        ]
        guard detailed else { return .object(members) }
        members += [
            ("paymentId", .string(credential.paymentId.paymentIDText)), ("merchantTokenIdentifier", optional(credential.merchantTokenIdentifier)),
            ("cardMetadata", credential.cardMetadata), ("stateReason", optional(credential.stateReason)),
            ("stateChangedAt", optional(credential.stateChangedAt.map(Logger.timestamp))), ("secretsShredded", .bool(credential.isShredded)),
            ("updatedAt", .string(Logger.timestamp(credential.updatedAt))),
        ]
        return .object(members)
    }
}
