// swift-tools-version:6.0
//
// PayPipe: a Swift-on-Linux worker pipeline that turns Apple Pay payment jobs into authorised payments.
// Layout, bottom to top:
//   system libraries (C)  →  CPayPipeShim, COpenSSLShim (variadic/macro forwarders only)
//   thin IO modules       →  AMQP, Postgres, HTTP, Crypto
//   pure domain modules   →  JSON, HTTPTypes, ApplePay, JWT, StageContract (the failure dispositions both sides
//                            share), PaymentDomain
//   runtime               →  WorkerRuntime: the worker loop, the batch shapes (prepare → call out → record), endpoint
//                            gate, delivery router, broker layout, component group, observability, generic
//                            configuration. Knows no payment: its dependency closure has no PaymentDomain
//                            (scripts/check-modules)
//   payment foundation    →  Pipeline: the payment store (the one writer of payments and payment_events), key
//                            handling, payment configuration, the pipeline's topology, the adapters from payment
//                            types to the runtime's; re-exports PaymentDomain and WorkerRuntime
//   stage implementations →  PaymentStages (each stage's steps, connectors, merchants, the payments' reconciler)
//   development tools     →  ApplePaySandbox, PayPipeDevTools (simulators, sandbox PKI, sample jobs): never linked by
//                            the workers (scripts/check-modules checks the worker executables' dependencies)
//   thin executables      →  paypipe (operator CLI), paypipe-<stage> workers
// Nothing outside the toolchain is fetched: every dependency is a Debian C library.
import Foundation
import PackageDescription

/// The git files that name the commit being built, for CBuildInfo (Sources/CBuildInfo/build_info.c embeds their text
/// at compile time, so a new commit recompiles it although SwiftPM caches this manifest): HEAD, the branch's loose ref
/// and packed-refs. None outside a git checkout (the Docker build): binaries then report only their version.
func gitBuildFiles() -> [CSetting] {
    let root = Context.packageDirectory
    func read(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    func absolute(_ path: String, from base: String) -> String { path.hasPrefix("/") ? path : base + "/" + path }
    func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: root + "/.git", isDirectory: &isDirectory) else { return [] }
    var gitDirectory = root + "/.git"
    if !isDirectory.boolValue {
        // A worktree (or submodule): `.git` is a file `gitdir: PATH`.
        guard let line = read(gitDirectory), line.hasPrefix("gitdir: ") else { return [] }
        gitDirectory = absolute(String(line.dropFirst("gitdir: ".count)), from: root)
    }
    // A worktree keeps its own HEAD; the refs are in the repository's common directory.
    let common = read(gitDirectory + "/commondir").map { absolute($0, from: gitDirectory) } ?? gitDirectory
    var settings: [CSetting] = [
        .define("BUILDINFO_GIT_HEAD_FILE", to: quoted(gitDirectory + "/HEAD")),
        .define("BUILDINFO_GIT_PACKED_REFS_FILE", to: quoted(common + "/packed-refs")),
    ]
    if let head = read(gitDirectory + "/HEAD"), head.hasPrefix("ref: ") {
        let ref = String(head.dropFirst("ref: ".count))
        settings += [.define("BUILDINFO_GIT_REF_NAME", to: quoted(ref)), .define("BUILDINFO_GIT_LOOSE_REF_FILE", to: quoted(common + "/" + ref))]
    }
    return settings
}

let package = Package(
    name: "PayPipe",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "paypipe", targets: ["paypipe"]),
        .executable(name: "paypipe-decrypt", targets: ["paypipe-decrypt"]),
        .executable(name: "paypipe-authorize", targets: ["paypipe-authorize"]),
        .executable(name: "paypipe-submit", targets: ["paypipe-submit"]),
        .executable(name: "paypipe-gateway-sim", targets: ["paypipe-gateway-sim"]),
        .executable(name: "paypipe-notify", targets: ["paypipe-notify"]),
        .executable(name: "paypipe-operations", targets: ["paypipe-operations"]),
        .executable(name: "paypipe-webhook-receiver", targets: ["paypipe-webhook-receiver"]),
        .executable(name: "paypipe-apple-notifications", targets: ["paypipe-apple-notifications"]),
    ],
    targets: [
        // MARK: C libraries from Debian
        .systemLibrary(name: "CRabbitMQ", pkgConfig: "librabbitmq", providers: [.apt(["librabbitmq-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // Header only: the prototype of the toolchain libFuzzer's LLVMFuzzerRunDriver. Nothing links libFuzzer
        // except scripts/fuzz (docs/fuzzing.md), which builds paypipe-fuzz with -DPAYPIPE_FUZZ.
        .systemLibrary(name: "CLibFuzzer"),
        .target(
            name: "CPayPipeShim",
            dependencies: ["CRabbitMQ", "CCurl", "CMicroHTTPD"]
        ),
        // The git commit being built (gitBuildFiles above), for WorkerRuntime's BuildInfo.
        .target(name: "CBuildInfo", cSettings: gitBuildFiles()),
        // OpenSSL's function-like macros (EVP_PKEY_PUBLIC_KEY, sk_X509_*), apart so that Crypto links no other C library.
        .target(name: "COpenSSLShim", dependencies: ["COpenSSL"]),

        // MARK: IO modules
        .target(name: "AMQP", dependencies: ["CRabbitMQ", "CPayPipeShim"]),
        .target(name: "Postgres", dependencies: ["CLibPQ"]),
        .target(name: "Crypto", dependencies: ["COpenSSL", "COpenSSLShim"]),
        .target(name: "HTTP", dependencies: ["HTTPTypes", "CCurl", "CMicroHTTPD", "CPayPipeShim"]),

        // MARK: Pure domain modules
        .target(name: "JSON"),
        // Header fields and the parsers of a peer's header lines and Retry-After: HTTP's value types, without libcurl.
        .target(name: "HTTPTypes"),
        .target(name: "ApplePay", dependencies: ["Crypto", "JSON"]),
        .target(name: "JWT", dependencies: ["Crypto", "JSON"]),
        // The payment model: jobs, stage messages, statuses, stages, the state machine, the failure-code catalogue.
        // No IO module (scripts/check-modules).
        // What a stage's message can come to, in the terms the runtime acts on (StageFailure): below both the payment
        // domain, which decides in them, and the runtime, which routes on them.
        .target(name: "StageContract"),
        .target(name: "PaymentDomain", dependencies: ["StageContract", "Crypto", "JSON"]),

        // MARK: Runtime (no PaymentDomain, scripts/check-modules)
        .target(name: "WorkerRuntime", dependencies: ["StageContract", "AMQP", "Postgres", "HTTP", "CPayPipeShim", "CBuildInfo"]),

        // MARK: Payment foundation (store, keys, topology, the payment side's adapters to the runtime)
        .target(name: "Pipeline", dependencies: ["WorkerRuntime", "PaymentDomain", "AMQP", "Postgres", "Crypto", "JSON"]),

        // MARK: Stage implementations (domain work of each stage, on the runtime)
        // A connector's pure wire mapping that the fuzz harness fuzzes is a module of its own inside the connector's
        // folder (PaymentDomain and JSON only, scripts/check-modules), so the harness links no stage code.
        .target(name: "TrustPaymentsWire", dependencies: ["PaymentDomain", "JSON"], path: "Sources/PaymentStages/Connectors/TrustPayments/Wire"),
        .target(name: "PaymentStages", dependencies: ["PaymentDomain", "Pipeline", "TrustPaymentsWire", "ApplePay", "JWT", "Crypto", "Postgres", "AMQP", "HTTP", "JSON"],
                exclude: ["Connectors/TrustPayments/Wire"]),

        // MARK: Development tools (docs/architecture.md, "Modules"): linked by the CLI, the simulators and the tests, never
        // by the paypipe-<stage> workers
        .target(name: "ApplePaySandbox", dependencies: ["ApplePay", "Crypto"]),
        .target(name: "PayPipeDevTools", dependencies: ["ApplePaySandbox", "PaymentStages", "Pipeline", "ApplePay", "Crypto", "COpenSSL", "HTTP", "JWT", "JSON"]),

        // MARK: Fuzzing (docs/fuzzing.md): the harness is a library so unit tests call the same function. Pure modules
        // only: of the C libraries, just OpenSSL (through Crypto), whose X.509 and CMS parsing it fuzzes (scripts/check-modules).
        .target(name: "FuzzTargets", dependencies: ["PaymentDomain", "TrustPaymentsWire", "ApplePay", "Crypto", "JSON", "HTTPTypes", "JWT"]),

        // MARK: Executables (thin mains)
        .executableTarget(name: "paypipe", dependencies: ["Pipeline", "PaymentStages", "PayPipeDevTools", "ApplePaySandbox", "ApplePay", "AMQP", "Postgres", "Crypto", "HTTP", "JWT"]),
        .executableTarget(name: "paypipe-decrypt", dependencies: ["Pipeline", "PaymentStages"]),
        .executableTarget(name: "paypipe-authorize", dependencies: ["Pipeline", "PaymentStages"]),
        .executableTarget(name: "paypipe-submit", dependencies: ["Pipeline", "PaymentStages"]),
        .executableTarget(name: "paypipe-gateway-sim", dependencies: ["PayPipeDevTools", "Pipeline"]),
        .executableTarget(name: "paypipe-notify", dependencies: ["Pipeline", "PaymentStages"]),
        .executableTarget(name: "paypipe-operations", dependencies: ["Pipeline", "PaymentStages"]),
        .executableTarget(name: "paypipe-apple-notifications", dependencies: ["Pipeline", "PaymentStages"]),
        .executableTarget(name: "paypipe-webhook-receiver", dependencies: ["Pipeline", "PayPipeDevTools", "HTTP"]),
        .executableTarget(name: "pg-bench", dependencies: ["Postgres"]),
        .executableTarget(name: "amqp-bench", dependencies: ["AMQP"]),
        .executableTarget(name: "http-bench", dependencies: ["HTTP"]),
        .executableTarget(name: "jwt-bench", dependencies: ["JWT"]),
        .executableTarget(name: "paypipe-fuzz", dependencies: ["FuzzTargets", "CLibFuzzer"]),
        .executableTarget(name: "paypipe-fuzz-seed", dependencies: ["FuzzTargets", "PayPipeDevTools", "PaymentStages", "ApplePay", "Crypto", "Pipeline"]),
        .executableTarget(name: "publish-job-example", dependencies: ["AMQP"], path: "examples/PublishJob"),

        // MARK: Tests
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "ApplePayTests", dependencies: ["ApplePay", "ApplePaySandbox", "Crypto"]),
        .testTarget(name: "JWTTests", dependencies: ["JWT", "Crypto"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP"]),
        // The runtime's unit tests: no PaymentDomain in their graph (scripts/check-modules).
        .testTarget(name: "WorkerRuntimeTests", dependencies: ["WorkerRuntime", "AMQP", "Postgres", "HTTP"]),
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline", "AMQP"]),
        // Pure: runs with RabbitMQ and PostgreSQL stopped (scripts/check-modules keeps IO modules out of its graph).
        .testTarget(name: "PaymentDomainTests", dependencies: ["PaymentDomain", "JSON"]),
        .testTarget(name: "PaymentStagesTests", dependencies: ["PaymentDomain", "PaymentStages", "TrustPaymentsWire", "PayPipeDevTools", "ApplePaySandbox", "Pipeline", "ApplePay", "JWT", "HTTP"]),
        .testTarget(name: "IntegrationTests", dependencies: ["PaymentDomain", "Pipeline", "PaymentStages", "TrustPaymentsWire", "PayPipeDevTools", "ApplePaySandbox", "AMQP", "Postgres", "HTTP", "Crypto", "ApplePay"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres"]),
        .testTarget(name: "AMQPTests", dependencies: ["AMQP"]),
        .testTarget(name: "FuzzTargetsTests", dependencies: ["FuzzTargets"]),
    ]
)
