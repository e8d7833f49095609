import ApplePay
import ApplePaySandbox
import Crypto
import Dispatch
import Foundation
import PaymentStages
import Pipeline
import Synchronization

/// `paypipe token decrypt|mint|bench`: operator tools around the ApplePay module.
///
/// Kept independent of `main.swift`: the dispatcher only calls `run(arguments:)` with the words after `token`.
/// Every outcome is one JSON object on stdout; failures are `{"error":{"code":…,"message":…}}` with exit status 65
/// for rejected tokens (64 usage, 66 unreadable file, 78 configuration).
enum TokenCommand: CLICommand {
    static let name = "token"
    static let summary = "decrypt, mint or benchmark Apple Pay tokens"
    static let usage = """
        usage: paypipe token decrypt --token FILE --merchant-cert PEM --merchant-key PEM [--merchant-cert PEM --merchant-key PEM …]
                                     [--trust-root PEM] [--now ISO8601] [--reveal]
               paypipe token mint --pki-dir DIR --merchant-id ID --amount MINOR --currency NUMERIC [--version EC_v1|RSA_v1]
                                  [--pan PAN] [--expiry YYMMDD] [--cryptogram B64] [--eci ECI] [--signing-time ISO8601]
                                  [--application-data TEXT] [--merchant-token IDENTIFIER] [--out FILE]
               paypipe token bench --token FILE [--token FILE …] --merchant-cert PEM --merchant-key PEM […]
                                   [--trust-root PEM] [--now ISO8601] [--seconds N] [--threads N] [--work-factor N]
        mint --merchant-id is an Apple merchant identifier (merchant.…, its sandbox identity created on first use) or a
        PayPipe merchant id with a document next to the PKI (DIR/../*.json, as `paypipe sandbox init` writes them), whose
        identity of the token's key type is used: --pki-dir var/sandbox/pki --merchant-id sandbox-merchant.
        mint --merchant-token IDENTIFIER mints a merchant token (MPAN) payment: merchantTokenIdentifier IDENTIFIER (at
        most 64 characters) and merchantTokenMetadata (fpanSuffix: the PAN's last four), as Apple sends for a recurring
        payment request; without it a device token (DPAN).
        bench --work-factor N decrypts each counted token N times (default 1): scripts/bench's proof that its guard
        catches an N-times slower decrypt.
        Without --trust-root, PAYPIPE_APPLEPAY_TRUST_ROOT (a PEM path) is used if set, else the pinned Apple Root CA - G3.
        PAYPIPE_APPLEPAY_TRUST_ROOT is honoured only with PAYPIPE_ENV=sandbox: otherwise decrypt and bench exit 78.
        """

    static let syntax = CommandSyntax(
        .init(["decrypt"], flags: ["--reveal"], options: ["--token", "--merchant-cert", "--merchant-key", "--trust-root", "--now"],
              repeatable: ["--merchant-cert", "--merchant-key"]),
        .init(["mint"], options: ["--pki-dir", "--merchant-id", "--amount", "--currency", "--version", "--pan", "--expiry", "--cryptogram",
                                  "--eci", "--signing-time", "--application-data", "--merchant-token", "--out"]),
        .init(["bench"], options: ["--token", "--merchant-cert", "--merchant-key", "--trust-root", "--now", "--seconds", "--threads", "--work-factor"],
              repeatable: ["--token", "--merchant-cert", "--merchant-key"]),
        .init(["help"]))

    static func run(_ options: CommandArguments) -> Int32 {
        do {
            switch options.positionals[0] {
            case "decrypt": try decrypt(options)
            case "mint": try mint(options)
            case "bench": try bench(options)
            default: print(usage)
            }
            return 0
        } catch let error as TokenCommandError {
            return report(error)
        } catch let error as CommandArguments.UsageError {
            return report(.usage(error.description))
        } catch {
            emit(["error": ["code": "internal", "message": "\(error)"]])
            return 70
        }
    }

    static func report(usage error: CommandArguments.UsageError) -> Int32 {
        report(.usage(error.description))
    }

    /// Prints the `{"error":…}` object (and the usage for a usage error); returns the exit status.
    private static func report(_ error: TokenCommandError) -> Int32 {
        emit(["error": ["code": error.code, "message": error.message]])
        if case .usage = error { FileHandle.standardError.write(Data((usage + "\n").utf8)) }
        return error.exitStatus
    }

    // MARK: decrypt

    private static func decrypt(_ options: CommandArguments) throws {
        let token = try parseToken(readFile(try options.required("--token")))
        let decryptor = ApplePayDecryptor(configuration: .init(trustRoot: try trustRoot(options)))
        let now = try fixedNow(options) ?? Date()
        let keyring = try keyring(options)
        let data: DecryptedPaymentData
        do {
            data = try decryptor.decrypt(token, keyring: keyring, now: now)
        } catch {
            throw TokenCommandError.token(error)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let output = try encoder.encode(options.flag("--reveal") ? data : data.masked)
        print(String(decoding: output, as: UTF8.self))
    }

    // MARK: mint

    private static func mint(_ options: CommandArguments) throws {
        let versionName = options.value("--version") ?? "EC_v1"
        guard let version = ApplePayToken.Version(rawValue: versionName) else { throw TokenCommandError.usage("--version must be EC_v1 or RSA_v1") }
        guard let amount = Int64(try options.required("--amount")), amount >= 0 else { throw TokenCommandError.usage("--amount must be a non-negative integer (minor units)") }
        let currency = try options.required("--currency")
        guard currency.count == 3, currency.allSatisfy(\.isNumber) else { throw TokenCommandError.usage("--currency must be ISO 4217 numeric, e.g. 978") }
        let directory = try options.required("--pki-dir")
        let merchantIdentifier = try sandboxIdentity(try options.required("--merchant-id"), keyType: version == .ecV1 ? .ec : .rsa, pkiDirectory: directory)
        let pki: SandboxPKI
        let merchant: (merchant: SandboxMerchant, created: Bool)
        do {
            pki = try SandboxPKI.loadOrCreate(directory: directory)
            merchant = try pki.merchantCreatingIfNeeded(merchantIdentifier, keyType: version == .ecV1 ? .ec : .rsa)
        } catch {
            throw TokenCommandError.configuration(code: "sandbox_pki_invalid", message: "\(error)")
        }
        var request = SandboxMintRequest(
            version: version, merchantIdentifier: merchantIdentifier, amount: amount, currencyNumeric: currency)
        if let pan = options.value("--pan") { request.pan = pan }
        if let expiry = options.value("--expiry") { request.expiry = expiry }
        if let cryptogram = options.value("--cryptogram") { request.cryptogram = cryptogram }
        if let eci = options.value("--eci") { request.eci = eci }
        if let time = options.value("--signing-time") { request.signingTime = try date(time, option: "signing-time") }
        if let applicationData = options.value("--application-data") { request.applicationData = Array(applicationData.utf8) }
        if let identifier = options.value("--merchant-token") {
            guard (1...64).contains(identifier.count), identifier.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw TokenCommandError.usage("--merchant-token must be 1 to 64 ASCII letters or digits")
            }
            request.merchantToken = .init(identifier: identifier, fpanSuffix: String(request.pan.suffix(4)))
        }
        let token = try pki.mintToken(request)
        if !pki.createdFiles.isEmpty || merchant.created {
            // First use: tell the operator which files to configure (stderr, so stdout stays the token).
            let info: [String: Any] = [
                "created": pki.createdFiles + (merchant.created ? [merchant.merchant.certificatePath, merchant.merchant.privateKeyPath].compactMap { $0 } : []),
                "trustRoot": "\(directory)/root.cert.pem",
                "merchantCertificate": merchant.merchant.certificatePath ?? "",
                "merchantKey": merchant.merchant.privateKeyPath ?? "",
            ]
            FileHandle.standardError.write(json(info) + Data("\n".utf8))
        }
        if let out = options.value("--out") {
            guard FileManager.default.createFile(atPath: out, contents: Data(token)) else { throw TokenCommandError.file("cannot write \(out)") }
            emit(["token": out])
        } else {
            print(String(decoding: token, as: UTF8.self))
        }
    }

    /// The sandbox identity to mint for. Apple merchant identifiers begin with `merchant.`: one is used as given (its
    /// identity created on first use, and the files to configure reported on stderr). Anything else is a PayPipe
    /// merchant id, resolved through the merchant documents next to the PKI (`paypipe sandbox init` writes DIR/*.json
    /// for DIR/pki) to the identity of the token's key type, so that the token decrypts for that merchant. A PayPipe
    /// id without a document is refused, naming the identifiers to use: minting for a new identity it would only fail
    /// later as unknown_merchant_key.
    private static func sandboxIdentity(_ id: String, keyType: KeyType, pkiDirectory: String) throws(TokenCommandError) -> String {
        if id.hasPrefix("merchant.") { return id }
        let folder = URL(fileURLWithPath: pkiDirectory).standardizedFileURL.deletingLastPathComponent()
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
        var merchants: [String] = []
        var identifiers: [String] = []
        for file in files {
            guard let data = FileManager.default.contents(atPath: folder.appendingPathComponent(file).path),
                  let document = try? JSONDecoder().decode(MerchantDocument.self, from: data) else { continue }
            merchants.append(document.id)
            if let apple = document.appleMerchantIdentifier, !identifiers.contains(apple) { identifiers.append(apple) }
            guard document.id == id else { continue }
            // Sandbox identities live in PKI/merchants/<identifier>/<ec|rsa>.cert.pem.
            for identity in document.identities {
                guard let certificate = identity.certificateFile, certificate.hasSuffix("/\(keyType).cert.pem") else { continue }
                return URL(fileURLWithPath: certificate).deletingLastPathComponent().lastPathComponent
            }
            throw .usage("merchant \(id) (\(file)) has no sandbox \(keyType) identity to mint for")
        }
        throw .usage("--merchant-id \(id): not an Apple merchant identifier (those begin with merchant.) and no merchant document in "
                     + "\(folder.path) has this id"
                     + (merchants.isEmpty ? "" : "; merchants there: " + merchants.joined(separator: ", "))
                     + (identifiers.isEmpty ? "" : "; their Apple merchant identifiers: " + identifiers.joined(separator: ", ")))
    }

    // MARK: bench

    private static func bench(_ options: CommandArguments) throws {
        let files = options.values("--token")
        guard !files.isEmpty else { throw TokenCommandError.usage("--token is required") }
        let tokens = try files.map(readFile)
        let seconds = Double(options.value("--seconds") ?? "3") ?? 0
        let threads = Int(options.value("--threads") ?? "1") ?? 0
        let workFactor = Int(options.value("--work-factor") ?? "1") ?? 0
        guard seconds > 0, threads > 0, workFactor > 0 else {
            throw TokenCommandError.usage("--seconds, --threads and --work-factor must be positive")
        }
        let keyring = try keyring(options)
        let decryptor = ApplePayDecryptor(configuration: .init(trustRoot: try trustRoot(options)))
        let fixedNow = try fixedNow(options)
        // Validate every token once (and warm the chain cache) so the loop measures the steady state.
        for token in tokens {
            do {
                _ = try decryptor.decrypt(ApplePayToken.parse(token), keyring: keyring, now: fixedNow ?? Date())
            } catch {
                throw TokenCommandError.token(error)
            }
        }
        let total = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let cpuStart = processCPUSeconds()
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + UInt64(seconds * 1e9)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var count = 0
            var index = thread
            while DispatchTime.now().uptimeNanoseconds < deadline {
                for _ in 0..<16 {
                    let token = tokens[index % tokens.count]
                    index += 1
                    do {
                        for _ in 0..<workFactor {
                            _ = try decryptor.decrypt(ApplePayToken.parse(token), keyring: keyring, now: fixedNow ?? Date())
                        }
                        count += 1
                    } catch {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }
            total.add(count, ordering: .relaxed)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpu = processCPUSeconds() - cpuStart
        let decrypted = total.load(ordering: .relaxed)
        // tokensPerCPUSecond divides by the CPU time the process used, like `openssl speed` (which divides by user
        // CPU time): on a shared machine it is the comparable per-core figure; tokensPerSecond is wall-clock.
        emit([
            "tokensPerSecond": (Double(decrypted) / elapsed).rounded(), "tokensPerCPUSecond": (Double(decrypted) / cpu).rounded(),
            "cpuSeconds": (cpu * 100).rounded() / 100, "threads": threads, "seconds": (elapsed * 100).rounded() / 100,
            "tokens": decrypted, "failures": failures.load(ordering: .relaxed),
        ])
    }

    // MARK: shared helpers

    /// User + system CPU time of the whole process.
    private static func processCPUSeconds() -> Double {
        var usage = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &usage)
        return Double(usage.tv_sec) + Double(usage.tv_nsec) / 1e9
    }

    private static func readFile(_ path: String) throws(TokenCommandError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw .file("cannot read \(path)") }
        return Array(data)
    }

    private static func parseToken(_ bytes: [UInt8]) throws(TokenCommandError) -> ApplePayToken {
        do {
            return try ApplePayToken.parse(bytes)
        } catch {
            throw .token(error)
        }
    }

    private static func keyring(_ options: CommandArguments) throws(TokenCommandError) -> MerchantKeyring {
        let certificates = options.values("--merchant-cert")
        let keys = options.values("--merchant-key")
        guard !certificates.isEmpty, certificates.count == keys.count else {
            throw .usage("give --merchant-cert and --merchant-key in pairs (at least one pair)")
        }
        var identities: [MerchantIdentity] = []
        for (certificate, key) in zip(certificates, keys) {
            let certificatePEM = String(decoding: try readFile(certificate), as: UTF8.self)
            let keyPEM = String(decoding: try readFile(key), as: UTF8.self)
            do {
                identities.append(try MerchantIdentity(certificatePEM: certificatePEM, privateKeyPEM: keyPEM))
            } catch {
                throw .configuration(code: error.code, message: "\(certificate): \(error.message)")
            }
        }
        return MerchantKeyring(identities: identities)
    }

    /// The `--trust-root` PEM, else the environment's (sandbox only, as for the workers), else Apple's pinned root.
    private static func trustRoot(_ options: CommandArguments) throws(TokenCommandError) -> TrustRoot {
        let environment = EnvironmentReader()
        let fromEnvironment: String?
        do {
            let deployment = try environment.choice("PAYPIPE_ENV", default: DeploymentEnvironment.production)
            fromEnvironment = try TrustRootPolicy.replacementPath(environment, deployment: deployment)
        } catch {
            throw .configuration(code: "trust_root_refused", message: error.description)
        }
        guard let path = options.value("--trust-root") ?? fromEnvironment else {
            return .appleRootCAG3
        }
        do {
            return try TrustRoot(pem: String(decoding: try readFile(path), as: UTF8.self))
        } catch let error as TokenCommandError {
            throw error
        } catch {
            throw .configuration(code: "trust_root_invalid", message: "\(path) is not a PEM certificate")
        }
    }

    /// `--now`, when the operator pins the clock (to replay an old token), else nil.
    private static func fixedNow(_ options: CommandArguments) throws(TokenCommandError) -> Date? {
        try options.value("--now").map { (text) throws(TokenCommandError) in try date(text, option: "now") }
    }

    private static func date(_ text: String, option: String) throws(TokenCommandError) -> Date {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        throw .usage("--\(option) must be an ISO 8601 time such as 2021-09-01T19:03:06Z")
    }

    private static func json(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }

    private static func emit(_ object: [String: Any]) {
        print(String(decoding: json(object), as: UTF8.self))
    }
}
