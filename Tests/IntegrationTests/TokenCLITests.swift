import Foundation
import Testing

extension Integration {
    /// `paypipe token` end to end through the built binary (`swift build` first): mint a sandbox token, decrypt it
    /// masked and revealed, reject a tampered one with exit 65 and its error code, and exit 64 on bad usage.
    /// Needs no services; nested in `Integration` only to run serially with the other process-spawning suites.
    @Suite struct TokenCLITests {
        static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        static let binary = packageRoot.appendingPathComponent(".build/debug/paypipe").path
        static let pan = "4111111111111111"

        /// A temporary sandbox PKI with one minted EC_v1 token, removed by `close()`.
        struct Sandbox {
            let directory: URL
            let merchant = "merchant.com.paypipe.clitest"
            var tokenPath: String { directory.appendingPathComponent("token.json").path }
            var merchantDirectory: String { directory.appendingPathComponent("pki/merchants/\(merchant)").path }
            /// The identity and trust options every `decrypt` needs, with the clock pinned to now.
            var identity: [String] {
                ["--merchant-cert", merchantDirectory + "/ec.cert.pem", "--merchant-key", merchantDirectory + "/ec.key.pem",
                 "--trust-root", directory.appendingPathComponent("pki/root.cert.pem").path,
                 "--now", ISO8601DateFormatter().string(from: Date())]
            }

            init() throws {
                try #require(FileManager.default.isExecutableFile(atPath: TokenCLITests.binary),
                             "build paypipe first (swift build): \(TokenCLITests.binary)")
                directory = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-cli-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                let mint = try TokenCLITests.paypipe(
                    ["token", "mint", "--pki-dir", directory.appendingPathComponent("pki").path, "--merchant-id", merchant,
                     "--amount", "4200", "--currency", "978", "--pan", TokenCLITests.pan, "--out", tokenPath])
                try #require(mint.status == 0, "mint failed: \(mint.text)")
            }

            func close() {
                try? FileManager.default.removeItem(at: directory)
            }

            func decrypt(token: String? = nil, _ extra: [String] = []) throws -> ChildProcess.Output {
                try TokenCLITests.paypipe(["token", "decrypt", "--token", token ?? tokenPath] + identity + extra)
            }
        }

        static func paypipe(_ arguments: [String]) throws -> ChildProcess.Output {
            try ChildProcess.runCapturingOutput(binary, arguments)
        }

        @Test func mintedTokenDecryptsWithThePANMasked() throws {
            let sandbox = try Sandbox()
            defer { sandbox.close() }
            let output = try sandbox.decrypt()
            #expect(output.status == 0, "\(output.text)")
            #expect(output.text.contains(#""applicationPrimaryAccountNumber":"************1111""#), "\(output.text)")
            #expect(output.text.contains(#""transactionAmount":4200"#))
            #expect(output.text.contains(#""currencyCode":"978""#))
            #expect(!output.text.contains(Self.pan))
        }

        /// `--merchant-token` mints a merchant token (MPAN) payment, as Apple sends for a recurring payment request: its
        /// identifier and metadata (the PAN's last four) in the decrypted data; an unusable identifier is a usage error.
        @Test func aMerchantTokenIsMintedWithItsIdentifierAndMetadata() throws {
            let sandbox = try Sandbox()
            defer { sandbox.close() }
            let token = sandbox.directory.appendingPathComponent("mpan.json").path
            let mint = try Self.paypipe(["token", "mint", "--pki-dir", sandbox.directory.appendingPathComponent("pki").path, "--merchant-id",
                                         sandbox.merchant, "--amount", "4200", "--currency", "978", "--pan", Self.pan,
                                         "--merchant-token", "DNITHE000000000000000042", "--out", token])
            #expect(mint.status == 0, "\(mint.text)")
            let output = try sandbox.decrypt(token: token)
            #expect(output.status == 0, "\(output.text)")
            #expect(output.text.contains(#""merchantTokenIdentifier":"DNITHE000000000000000042""#), "\(output.text)")
            #expect(output.text.contains(#""fpanSuffix":"\#(Self.pan.suffix(4))""#), "\(output.text)")
            let refused = try Self.paypipe(["token", "mint", "--pki-dir", sandbox.directory.appendingPathComponent("pki").path, "--merchant-id",
                                            sandbox.merchant, "--amount", "1", "--currency", "978", "--merchant-token", String(repeating: "A", count: 65)])
            #expect(refused.status == 64 && refused.text.contains("--merchant-token"), "\(refused.text)")
        }

        @Test func revealPrintsTheFullPAN() throws {
            let sandbox = try Sandbox()
            defer { sandbox.close() }
            let output = try sandbox.decrypt(["--reveal"])
            #expect(output.status == 0, "\(output.text)")
            #expect(output.text.contains(#""applicationPrimaryAccountNumber":"\#(Self.pan)""#), "\(output.text)")
        }

        /// One flipped ciphertext bit: the CMS messageDigest no longer matches, so the token is rejected before any
        /// decryption, with exit 65 (EX_DATAERR) and the error code on stdout.
        @Test func tamperedTokenIsRejectedWithExit65() throws {
            let sandbox = try Sandbox()
            defer { sandbox.close() }
            let original = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: sandbox.tokenPath)))
            var token = try #require(original as? [String: Any])
            var paymentData = try #require(token["paymentData"] as? [String: Any])
            let encrypted = try #require(paymentData["data"] as? String)
            var data = try #require(Data(base64Encoded: encrypted))
            data[data.startIndex + 5] ^= 0x01
            paymentData["data"] = data.base64EncodedString()
            token["paymentData"] = paymentData
            let tamperedPath = sandbox.directory.appendingPathComponent("tampered.json").path
            try JSONSerialization.data(withJSONObject: token).write(to: URL(fileURLWithPath: tamperedPath))

            let output = try sandbox.decrypt(token: tamperedPath)
            #expect(output.status == 65, "\(output.text)")
            #expect(output.text.contains(#"{"error":{"code":"signature_invalid","message":"#), "\(output.text)")
            #expect(!output.text.contains(Self.pan))
        }

        /// Outside sandbox a replacement trust root is refused (exit 78, naming the variable): with the sandbox root in
        /// PAYPIPE_APPLEPAY_TRUST_ROOT a minted token would decrypt in production as if Apple had signed it.
        @Test func aReplacedTrustRootIsRefusedOutsideSandbox() throws {
            let sandbox = try Sandbox()
            defer { sandbox.close() }
            let root = sandbox.directory.appendingPathComponent("pki/root.cert.pem").path
            let identity = Array(sandbox.identity.prefix(4)) + ["--now", ISO8601DateFormatter().string(from: Date())]
            let arguments = ["token", "decrypt", "--token", sandbox.tokenPath] + identity
            for deployment in ["production", ""] {
                let refused = try ChildProcess.runCapturingOutput(Self.binary, arguments, environment: [
                    "PAYPIPE_ENV": deployment, "PAYPIPE_APPLEPAY_TRUST_ROOT": root,
                ])
                #expect(refused.status == 78, "\(refused.text)")
                #expect(refused.text.contains("PAYPIPE_APPLEPAY_TRUST_ROOT"), "\(refused.text)")
                #expect(!refused.text.contains(Self.pan))
            }
            let sandboxed = try ChildProcess.runCapturingOutput(Self.binary, arguments, environment: [
                "PAYPIPE_ENV": "sandbox", "PAYPIPE_APPLEPAY_TRUST_ROOT": root,
            ])
            #expect(sandboxed.status == 0, "\(sandboxed.text)")
        }

        /// `--merchant-id sandbox-merchant` (a PayPipe merchant id) mints for the identity in that merchant's sandbox
        /// document, so the token decrypts with it; no identity is created under the PayPipe id. An id with no document
        /// is refused (64), naming the Apple merchant identifier to use. On 42a0385 both minted for a new identity.
        @Test func mintResolvesAPayPipeMerchantIdOrRefusesIt() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-cli-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let initialised = try ChildProcess.runCapturingOutput(Self.binary, ["sandbox", "init", "--dir", directory])
            try #require(initialised.status == 0, "\(initialised.text)")
            let pki = directory + "/pki"
            let minted = try Self.paypipe(["token", "mint", "--pki-dir", pki, "--merchant-id", "sandbox-merchant", "--amount", "1250",
                                           "--currency", "826", "--out", directory + "/token.json"])
            #expect(minted.status == 0, "\(minted.text)")
            #expect(!FileManager.default.fileExists(atPath: pki + "/merchants/sandbox-merchant"), "an identity was created for the PayPipe id")
            let identity = pki + "/merchants/merchant.dev.paypipe.sandbox"
            let decrypted = try Self.paypipe(["token", "decrypt", "--token", directory + "/token.json", "--merchant-cert", identity + "/ec.cert.pem",
                                              "--merchant-key", identity + "/ec.key.pem", "--trust-root", pki + "/root.cert.pem"])
            #expect(decrypted.status == 0, "\(decrypted.text)")
            #expect(decrypted.text.contains(#""transactionAmount":1250"#), "\(decrypted.text)")

            let refused = try Self.paypipe(["token", "mint", "--pki-dir", pki, "--merchant-id", "sandbox-merchnt", "--amount", "1", "--currency", "826"])
            #expect(refused.status == 64, "\(refused.text)")
            #expect(refused.text.contains("sandbox-merchnt") && refused.text.contains("merchant.dev.paypipe.sandbox"), "\(refused.text)")
            #expect(!FileManager.default.fileExists(atPath: pki + "/merchants/sandbox-merchnt"))
        }

        @Test func usageErrorsExit64() throws {
            let sandbox = try Sandbox()
            defer { sandbox.close() }
            let missingToken = try Self.paypipe(["token", "decrypt"] + sandbox.identity)
            #expect(missingToken.status == 64, "\(missingToken.text)")
            #expect(missingToken.text.contains(#"{"error":{"code":"usage","message":"missing --token"}}"#), "\(missingToken.text)")
            // Declared options only: a misspelt one is an error, not silently ignored.
            let unknown = try sandbox.decrypt(["--revael"])
            #expect(unknown.status == 64, "\(unknown.text)")
            #expect(unknown.text.contains("unknown option --revael"))
            #expect(try Self.paypipe(["token", "decrypt", "--token", sandbox.tokenPath, "--token", sandbox.tokenPath]).status == 64)
            #expect(try Self.paypipe(["token", "frobnicate"]).status == 64)
        }
    }
}
