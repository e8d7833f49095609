import AMQP
import ApplePay
import ApplePaySandbox
import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres

/// A clean broker and database, the sandbox merchant applied, and a decrypt ``StageRuntime`` that trusts
/// the sandbox root — the decrypt worker as `paypipe-decrypt` runs it, in-process.
struct DecryptHarness {
    let sandbox: SandboxEnvironment
    let vault: DataVault
    let logSink = LogSink(capturing: ())
    let base: RuntimeHarness

    init() throws {
        base = try RuntimeHarness()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-sandbox-\(UUID())").path
        sandbox = try SandboxEnvironment.open(directory: directory)
        vault = DataVault(keyring: try DataKeyring.load(EnvironmentReader(["PAYPIPE_DATA_KEY_FILE": sandbox.dataKeyPath]), deployment: .sandbox))
        let database = try TestServices.database()
        defer { database.close() }
        try MerchantStore(vault: vault).apply(sandbox.merchantDocument(), baseDirectory: URL(fileURLWithPath: sandbox.directory), deployment: .sandbox, on: database)
    }

    func makeRuntime(reconcileInterval: String = "0") throws -> StageRuntime<DecryptWorker> {
        let configuration = try WorkerConfiguration(stage: .decrypt, environment: EnvironmentReader([
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": TestServices.amqpURL, "PAYPIPE_DATABASE_URL": TestServices.databaseURL,
            "PAYPIPE_METRICS_PORT": "0", "PAYPIPE_METRICS_HOST": "127.0.0.1", "PAYPIPE_RETRY_DELAYS": "300ms",
            "PAYPIPE_RECONCILE_INTERVAL": reconcileInterval,
        ]))
        // The worker's handler (`paypipe-decrypt`): the stage with its upkeep, the certificate watch.
        let worker = DecryptWorker(makeStage())
        return try StageRuntime(handler: worker, configuration: configuration,
                                logger: Logger(component: "decrypt", threshold: .debug, sink: logSink),
                                components: ReconcilerComponent.components(for: worker))
    }

    /// The stage as the runtime runs it, for tests that drive batches directly.
    func makeStage() -> DecryptStage {
        DecryptStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: 0),
            cardData: CardDataStore(vault: vault),
            decryptor: ApplePayDecryptor(configuration: ApplePayVerifierConfiguration(trustRoot: sandbox.pki.trustRoot)))
    }

    func startedRuntime(reconcileInterval: String = "0") throws -> StageRuntime<DecryptWorker> {
        let runtime = try makeRuntime(reconcileInterval: reconcileInterval)
        try runtime.start()
        return runtime
    }

    /// A minted EC_v1 token for the sandbox merchant, optionally with defects.
    func token(amount: Int64 = 1099, currencyNumeric: String = "826", pan: String = "4111111111111111",
               cryptogram: String = "AOOkA5VbH8mMAAKhnQNnAoABFA==", _ customize: (inout SandboxMintRequest) -> Void = { _ in }) throws -> [UInt8] {
        try sandbox.mintJobToken(amount: amount, currencyNumeric: currencyNumeric, pan: pan, cryptogram: cryptogram, customize)
    }

    /// A job body per the contract.
    func job(_ jobId: String, token: [UInt8], amount: Int64 = 1099, currency: String = "GBP",
             merchantId: String = SandboxEnvironment.merchantId) throws -> [UInt8] {
        try SandboxEnvironment.jobBody(jobId, token: token, amount: amount, currency: currency, merchantId: merchantId)
    }

    /// Publishes job bodies to the ingress exchange, as a backend would.
    func publishJobs(_ bodies: [[UInt8]]) throws {
        try publishJobs(bodies.map { JobIngress.Job(body: $0) })
    }

    func publishJobs(_ jobs: [JobIngress.Job]) throws {
        try JobIngress.publish(jobs, retrySchedule: base.configuration.retrySchedule)
    }

    /// (status, error code) of the payment for a job id, if it exists.
    func outcome(_ jobId: String) throws -> (status: String, code: String?)? {
        let database = try TestServices.database()
        defer { database.close() }
        guard let row = try database.query("SELECT status, error_code FROM payments WHERE job_id = $1", [jobId]).first else { return nil }
        return (try row.decode("status", as: String.self), try row.decode("error_code", as: String?.self))
    }
}
