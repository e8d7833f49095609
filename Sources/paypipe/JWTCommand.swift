import Foundation
import JWT
import PaymentStages

/// `paypipe jwt decode`: shows a gateway request or response JWT (the `jwt` transport) for support work.
///
/// Card fields (`pan`, `tavv`, `wallettoken`, `expirydate`, and nested JWTs) are masked unless `--reveal` is given,
/// so pasting the output into a ticket does not leak card data. The signature is verified only when a secret is
/// given; the secret itself is never printed. Exit status: 0 decoded (and verified when a secret was given),
/// 65 malformed or bad signature, 64 usage, 66 unreadable secret file.
enum JWTCommand: CLICommand {
    static let name = "jwt"
    static let summary = "decode (and verify) gateway JWTs (the jwt transport), card fields masked"
    static let usage = """
        usage: paypipe jwt decode [--secret S | --secret-file FILE] [--reveal] [--json] JWT
          Prints {"header":…,"claims":…,"signature":…} as one JSON line. JWT may be "-" to read it from stdin.
          --secret S         verify the HMAC signature (HS256/384/512) with the merchant's JWT secret; exit 65 if it fails
          --secret-file F    the same, reading the secret from a file (keeps it out of the process list)
          --reveal           show pan, tavv, wallettoken, expirydate and nested JWTs unmasked
          --json             accepted for symmetry with the other read commands: the output is always JSON
        """

    static let syntax = CommandSyntax(.init(["decode"], operands: ["JWT"], flags: ["--reveal", "--json"], options: ["--secret", "--secret-file"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        if arguments.value("--secret") != nil, arguments.value("--secret-file") != nil {
            return report(usage: .init(description: "give --secret or --secret-file, not both"))
        }
        guard let token = readToken(arguments.positionals[1]) else {
            printError("paypipe jwt: cannot read the JWT from stdin")
            return ExitCode.dataError
        }
        var secret = arguments.value("--secret")
        if let path = arguments.value("--secret-file") {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                printError("paypipe jwt: cannot read \(path)")
                return 66
            }
            secret = text.trimmingCharacters(in: .newlines)
        }
        return decode(token, secret: secret, reveal: arguments.flag("--reveal"))
    }

    /// Decodes, optionally verifies, prints; returns the exit status.
    static func decode(_ token: String, secret: String?, reveal: Bool, now: Date = Date()) -> Int32 {
        let header: JSONValue, claims: JSONValue
        do {
            (header, claims) = try segments(token)
        } catch {
            printError("paypipe jwt: \(error)")
            return ExitCode.dataError
        }
        var output: JSONValue = ["header": header, "claims": reveal ? claims : ClaimsRedactor.masked(claims)]
        var status = ExitCode.ok
        if let secret {
            do {
                // Signature only: time claims are reported below, not enforced, so an old JWT can still be checked.
                let verified = try JWTVerifier(
                    key: Array(secret.utf8), algorithms: Set(JWTAlgorithm.allCases), clockSkew: 100 * 365 * 86_400
                ).verify(token)
                output.set(.string("verified (\(verified.header.algorithm.rawValue))"), forKey: "signature")
            } catch {
                output.set("invalid", forKey: "signature")
                printError("paypipe jwt: \(error)")
                status = ExitCode.dataError
            }
        } else {
            output.set("not verified (no --secret)", forKey: "signature")
        }
        if let issuedAt = claims["iat"]?.doubleValue, issuedAt.isFinite, abs(issuedAt) < 1e12 {
            output.set(.string(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: issuedAt))), forKey: "issuedAt")
            output.set(.integer(Int64((now.timeIntervalSince1970 - issuedAt).rounded(.down))), forKey: "ageSeconds")
        }
        print(output.serializedString)
        return status
    }

    struct DecodeError: Error, CustomStringConvertible {
        let description: String
    }

    /// Header and claims of a compact JWS, both required to be JSON objects. Nothing is trusted from them.
    static func segments(_ token: String) throws -> (header: JSONValue, claims: JSONValue) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw DecodeError(description: "not a compact JWT (expected three dot-separated segments)") }
        func object(_ segment: Substring, _ what: String) throws -> JSONValue {
            guard let bytes = Base64URL.decode(segment) else { throw DecodeError(description: "\(what) is not base64url") }
            guard let value = try? JSONValue.parse(bytes), value.objectValue != nil else {
                throw DecodeError(description: "\(what) is not a JSON object")
            }
            return value
        }
        return (try object(parts[0], "header"), try object(parts[1], "claims"))
    }

    /// The JWT argument, or stdin for "-"; surrounding whitespace (a pasted newline) is dropped.
    private static func readToken(_ argument: String) -> String? {
        guard argument == "-" else { return argument.trimmingCharacters(in: .whitespacesAndNewlines) }
        let data = FileHandle.standardInput.readDataToEndOfFile()
        return String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
