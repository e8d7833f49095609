import Foundation
import HTTP
import JWT

/// A Trust Payments-compatible gateway for local runs, tests and benchmarks, on libmicrohttpd.
///
/// - `POST /jwt/`: the JWT envelope; the request JWT is verified with the issuer's configured secret and the answer
///   is a `{"jwt": …}` signed (HS256) with the same secret, in Trust Payments' response shape.
/// - `POST /json/`: the Webservices JSON envelope with HTTP Basic, answered as the gateway answers Trust Payments'
///   Python SDK: `{requestreference (echoed), version, response[] (every request object's items, in order),
///   secrand}`; `version` other than `1.00` is 30007.
/// - `GET /_sim/auths?orderreference=…`: `{"orderreference", "count", "total"}` — the AUTHs accepted;
///   `GET /_sim/auths?all=1`: `{"total", "counts": {orderreference: n, …}}` — every order's count.
/// - `GET /_sim/requests`: `{"requests": [{"headers": {…}, "body": …}]}` — the last /json/ requests received
///   (the `Authorization` header left out), for contract tests.
/// - `GET /_sim/operations[?transactionreference=…]`: `{"operations": [...]}` — every TRANSACTIONUPDATE and REFUND that
///   took effect, with the request reference it was sent under (the operation ledger).
/// - `GET /_sim/payments`: `{"payments": [...]}` — every face's authorisations with the money they moved since
///   (refunded, voided; ``SimulatorMoneyExport``).
/// - `/_sim/apple/…`: the script of the Apple merchant-token API face (``AppleTokenAPISimulator/admin(_:face:)``), which
///   itself listens on its own mutual-TLS port when configured (``GatewaySimulatorConfiguration/appleTokenAPI``).
///
/// Behaviour is chosen by amount (``SimulatorBehaviour``), plus optional random faults (chaos runs): HTTP 503
/// before processing, and lost answers (timeout or connection reset) after the AUTH is recorded.
/// The ledger is in memory: it lives as long as the process.
public final class GatewaySimulator: Sendable {
    public let configuration: GatewaySimulatorConfiguration
    public let ledger = SimulatorLedger()
    /// Answers kept back until a test releases them.
    public let holds = SimulatorHolds()
    /// The OPP and TapPay faces' per-payment state (their authorisations are also counted in ``ledger``).
    let opp = OPPSimulatorFace()
    let tapPay = TapPaySimulatorFace()
    /// Apple's merchant-token API over mutual TLS, when configured.
    public let appleTokenAPI: AppleTokenAPISimulator?
    private let server: HTTPServer

    public init(configuration: GatewaySimulatorConfiguration) {
        self.configuration = configuration
        let dice = SimulatorDice(seed: configuration.seed)
        let engine = SimulatorEngine(
            ledger: ledger, slowResponseSeconds: configuration.slowResponseSeconds, faultRate: configuration.faultRate,
            timeoutRate: configuration.timeoutRate, resetRate: configuration.resetRate, loseRate: configuration.loseRate, dice: dice,
            settleDelaySeconds: configuration.settleDelaySeconds)
        let (holds, ledger) = (holds, ledger)
        let (opp, tapPay) = (opp, tapPay)
        let appleTokenAPI = configuration.appleTokenAPI.map { AppleTokenAPISimulator(files: $0.files) }
        self.appleTokenAPI = appleTokenAPI
        server = HTTPServer(host: configuration.host, port: configuration.port, threads: configuration.threads) { request in
            if request.method == "GET", request.path == "/_sim/payments" {
                return .json(SimulatorMoneyExport.payments(ledger: ledger, opp: opp, tapPay: tapPay).serialized())
            }
            if request.path.hasPrefix("/_sim/apple/") { return AppleTokenAPISimulator.admin(request, face: appleTokenAPI) }
            if OPPSimulatorFace.paths(request.path) { return opp.route(request, engine: engine, configuration: configuration, holds: holds) }
            if TapPaySimulatorFace.paths(request.path) { return tapPay.route(request, engine: engine, configuration: configuration, holds: holds) }
            return Self.route(request, engine: engine, configuration: configuration, holds: holds)
        }
    }

    public func start() throws {
        try server.start()
        do {
            try appleTokenAPI?.start(port: configuration.appleTokenAPI?.port ?? 0)
        } catch {
            server.stop()
            throw error
        }
    }

    public func stop() {
        appleTokenAPI?.stop()
        server.stop()
    }
    public var boundPort: UInt16 { server.boundPort }
    /// `http://host:port` of the running simulator.
    public var baseURL: String { "http://\(configuration.host):\(boundPort)" }

    // MARK: Routing

    static func route(
        _ request: HTTPServerRequest, engine: SimulatorEngine, configuration: GatewaySimulatorConfiguration, holds: SimulatorHolds
    ) -> HTTPServerResponse {
        switch (request.method, request.path) {
        case ("POST", "/jwt/"), ("POST", "/jwt"):
            return jwtEndpoint(request, engine: engine, configuration: configuration, holds: holds)
        case ("POST", "/json/"), ("POST", "/json"):
            return jsonEndpoint(request, engine: engine, configuration: configuration, holds: holds)
        case ("GET", "/_sim/requests"):
            return .json((["requests": .array(engine.ledger.captured)] as JSONValue).serialized())
        case ("GET", "/_sim/auths"):
            var body: JSONValue = ["total": .integer(Int64(engine.ledger.totalAuths))]
            if let reference = request.query["orderreference"] {
                body.set(.string(reference), forKey: "orderreference")
                body.set(.integer(Int64(engine.ledger.authCount(orderReference: reference))), forKey: "count")
            }
            if request.query["records"] != nil {
                // Every processed AUTH with what the adversarial checker maps to jobs (no full PAN is ever recorded).
                body.set(.array(engine.ledger.allRecords().map { reference, item in
                    [
                        "orderreference": .string(reference), "baseamount": item["baseamount"] ?? .null,
                        "currencyiso3a": item["currencyiso3a"] ?? .null, "errorcode": item["errorcode"] ?? .null,
                        "settlestatus": item["settlestatus"] ?? .null,
                        "last4": item["maskedpan"]?.stringValue.map { .string(String($0.suffix(4))) } ?? .null,
                    ]
                }), forKey: "records")
            }
            if request.query["all"] != nil {
                let counts = engine.ledger.authCounts().sorted { $0.key < $1.key }
                body.set(.object(counts.map { (key: $0.key, value: .integer(Int64($0.value))) }), forKey: "counts")
            }
            return .json(body.serialized())
        case ("GET", "/_sim/operations"):
            let target = request.query["transactionreference"]
            let entries = engine.ledger.operations.filter { target == nil || $0["transactionreference"]?.stringValue == target }
            return .json((["operations": .array(entries)] as JSONValue).serialized())
        case ("GET", "/_sim/health"):
            return .text("ok\n")
        default:
            return .text("not found\n", status: 404)
        }
    }
}
