import Foundation
import HTTP
import JWT

/// A Trust Payments-compatible gateway for local runs, tests and benchmarks, on libmicrohttpd.
///
/// - `POST /jwt/`: the JWT envelope; the request JWT is verified with the issuer's configured secret and the answer
///   is a `{"jwt": …}` signed (HS256) with the same secret, in Trust Payments' response shape.
/// - `POST /json/`: the Webservices JSON envelope with HTTP Basic; plain JSON answer.
/// - `GET /_sim/auths?orderreference=…`: `{"orderreference", "count", "total"}` — the AUTHs accepted;
///   `GET /_sim/auths?all=1`: `{"total", "counts": {orderreference: n, …}}` — every order's count.
///
/// Behaviour is chosen by amount (``SimulatorBehaviour``), plus optional random faults (chaos runs): HTTP 503
/// before processing, and lost answers (timeout or connection reset) after the AUTH is recorded.
/// The ledger is in memory: it lives as long as the process.
public final class GatewaySimulator: Sendable {
    public let configuration: GatewaySimulatorConfiguration
    public let ledger = SimulatorLedger()
    /// Answers kept back until a test releases them.
    public let holds = SimulatorHolds()
    private let server: HTTPServer

    public init(configuration: GatewaySimulatorConfiguration) {
        self.configuration = configuration
        let dice = SimulatorDice(seed: configuration.seed)
        let engine = SimulatorEngine(
            ledger: ledger, slowResponseSeconds: configuration.slowResponseSeconds, faultRate: configuration.faultRate,
            timeoutRate: configuration.timeoutRate, resetRate: configuration.resetRate, loseRate: configuration.loseRate, dice: dice)
        let holds = holds
        server = HTTPServer(host: configuration.host, port: configuration.port, threads: configuration.threads) { request in
            Self.route(request, engine: engine, configuration: configuration, holds: holds)
        }
    }

    public func start() throws { try server.start() }
    public func stop() { server.stop() }
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
            return jsonEndpoint(request, engine: engine, configuration: configuration)
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
        case ("GET", "/_sim/health"):
            return .text("ok\n")
        default:
            return .text("not found\n", status: 404)
        }
    }

    private static func jwtEndpoint(
        _ request: HTTPServerRequest, engine: SimulatorEngine, configuration: GatewaySimulatorConfiguration, holds: SimulatorHolds
    ) -> HTTPServerResponse {
        guard let envelope = try? JSONValue.parse(request.body), let token = envelope["jwt"]?.stringValue else {
            return plainError("10205", "Malformed JSON")
        }
        guard let issuer = unverifiedIssuer(token), let secret = configuration.merchants[issuer] else {
            return plainError("10300", "JWT decoding error")
        }
        let signer = JWTSigner(algorithm: .hs256, key: Array(secret.utf8))
        let claims: JSONValue
        do {
            // Checked when the request is processed, not when it arrived: a request that waited in the server's queue
            // past its `exp` is refused and never recorded (the client has given up on it by then).
            claims = try JWTVerifier(
                key: Array(secret.utf8), algorithms: [.hs256], maxAge: configuration.maxJWTAge, clockSkew: configuration.jwtClockSkew
            ).verify(token).claims
        } catch {
            return signedAnswer([SimulatorEngine.item("ERROR", code: "10300", message: "JWT decoding error", extra: [("errordata", ["jwt"])])], signer: signer)
        }
        let payload = claims["payload"] ?? [:]
        let requestObject = envelope["request"]?[0] ?? [:]
        let (types, fields) = merged(payload: payload, requestObject: requestObject)
        if envelope["version"]?.stringValue != "1.00" {
            return signedAnswer([SimulatorEngine.item("ERROR", code: "30007", message: "Invalid version number")], signer: signer)
        }
        guard let types else {
            return signedAnswer([SimulatorEngine.item("ERROR", code: "60040", message: "Invalid requesttypedescriptions")], signer: signer)
        }
        let orderReference = fields["orderreference"]?.stringValue ?? fields["filter"]?["orderreference"]?[0]?["value"]?.stringValue ?? ""
        if holds.losesUnprocessed(requestTypes: types, orderReference: orderReference) { return .connectionReset }
        let reply = engine.handle(requestTypes: types, fields: fields)
        holds.awaitRelease(requestTypes: types, orderReference: orderReference)
        if types == ["TRANSACTIONQUERY"], configuration.queryDelaySeconds > 0 {
            // The answer reflects the ledger when the query arrived; delivering it later lets concurrent queries overlap.
            Thread.sleep(forTimeInterval: engine.dice.next() * configuration.queryDelaySeconds)
        }
        switch reply.delivery {
        case .answer: return signedAnswer(reply.items, signer: signer)
        case .slow(let seconds):
            Thread.sleep(forTimeInterval: seconds)
            return signedAnswer(reply.items, signer: signer)
        case .forged: return signedAnswer(reply.items, signer: JWTSigner(algorithm: .hs256, key: Array("forged-\(secret)".utf8)))
        case .serverError: return .text("internal server error\n", status: 500)
        case .unavailable: return .text("service unavailable\n", status: 503)
        case .connectionReset: return .connectionReset
        }
    }

    private static func jsonEndpoint(_ request: HTTPServerRequest, engine: SimulatorEngine, configuration: GatewaySimulatorConfiguration) -> HTTPServerResponse {
        guard let (user, password) = basicCredentials(request.header("Authorization")),
              let expected = configuration.webservicesUsers[user], expected == password else {
            return .text("unauthorized\n", status: 401)
        }
        guard let envelope = try? JSONValue.parse(request.body), let requestObject = envelope["request"]?[0] else {
            return plainError("10205", "Malformed JSON")
        }
        let (types, fields) = merged(payload: [:], requestObject: requestObject)
        let reply = engine.handle(requestTypes: types ?? [], fields: fields)
        switch reply.delivery {
        case .serverError: return .text("internal server error\n", status: 500)
        case .unavailable: return .text("service unavailable\n", status: 503)
        case .connectionReset: return .connectionReset
        case .slow(let seconds):
            Thread.sleep(forTimeInterval: seconds)
        case .answer, .forged: break
        }
        let body: JSONValue = ["requestreference": .string(requestReference()), "version": "1.00", "response": .array(reply.items)]
        return .json(body.serialized())
    }

    // MARK: Helpers

    /// Request types and fields of a request: the JWT payload's fields overlaid by the request object's. Request
    /// types come from either, but not from both (60040, as the real gateway); nil means "sent twice".
    static func merged(payload: JSONValue, requestObject: JSONValue) -> (types: [String]?, fields: JSONValue) {
        let fromPayload = payload["requesttypedescriptions"]?.arrayValue?.compactMap(\.stringValue)
        let fromRequest = requestObject["requesttypedescriptions"]?.arrayValue?.compactMap(\.stringValue)
        var fields = payload.objectValue == nil ? JSONValue.object([]) : payload
        for (key, value) in requestObject.objectValue ?? [] where key != "requesttypedescriptions" && key != "requestid" {
            fields.set(value, forKey: key)
        }
        if let fromPayload, let fromRequest, fromPayload != fromRequest { return (nil, fields) }
        return (fromPayload ?? fromRequest ?? [], fields)
    }

    /// `iss` of a token before verification, only to pick the key that verifies it.
    static func unverifiedIssuer(_ token: String) -> String? {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3, let payload = Base64URL.decode(segments[1]), let claims = try? JSONValue.parse(payload) else { return nil }
        return claims["iss"]?.stringValue
    }

    static func basicCredentials(_ header: String?) -> (String, String)? {
        guard let header, header.lowercased().hasPrefix("basic "),
              let data = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":") else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    private static func signedAnswer(_ items: [JSONValue], signer: JWTSigner) -> HTTPServerResponse {
        let claims: JSONValue = [
            "iat": .integer(Int64(Date().timeIntervalSince1970)),
            "payload": ["requestreference": .string(requestReference()), "version": "1.00", "response": .array(items),
                        "secrand": .string(String(UInt64.random(in: 0...UInt64.max), radix: 36))],
        ]
        let body: JSONValue = ["jwt": .string(signer.sign(claims))]
        return .json(body.serialized())
    }

    private static func plainError(_ code: String, _ message: String) -> HTTPServerResponse {
        let body: JSONValue = ["errorcode": .string(code), "errormessage": .string(message)]
        return .json(body.serialized())
    }

    private static func requestReference() -> String { "W9-" + String(UInt32.random(in: 0...UInt32.max), radix: 36) }
}
