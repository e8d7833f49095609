import Foundation
import HTTP
import JWT

/// The simulator's Trust Payments face: `POST /jwt/` (the signed JWT envelope) and `POST /json/` (the Webservices JSON
/// envelope with HTTP Basic), answered by the engine (``SimulatorEngine``) in Trust Payments' shapes.
extension GatewaySimulator {
    static func jwtEndpoint(
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
        let (parsedTypes, fields) = merged(payload: payload, requestObject: requestObject)
        if envelope["version"]?.stringValue != "1.00" {
            return signedAnswer([SimulatorEngine.item("ERROR", code: "30007", message: "Invalid version number")], signer: signer)
        }
        let types: [String]
        switch parsedTypes {
        case .failure(let error): return signedAnswer([error.item], signer: signer)
        case .success(let found): types = found
        }
        guard let reply = decide(types, fields, engine: engine, configuration: configuration, holds: holds) else { return .connectionReset }
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

    static func jsonEndpoint(
        _ request: HTTPServerRequest, engine: SimulatorEngine, configuration: GatewaySimulatorConfiguration, holds: SimulatorHolds
    ) -> HTTPServerResponse {
        guard let (user, password) = basicCredentials(request.header("Authorization")),
              let expected = configuration.webservicesUsers[user], expected == password else {
            return .text("unauthorized\n", status: 401)
        }
        let envelope = try? JSONValue.parse(request.body)
        engine.ledger.capture(["headers": .object(request.headers.filter { $0.name.lowercased() != "authorization" }.map { (key: $0.name, value: .string($0.value)) }),
                               "body": envelope ?? .null])
        let objects = envelope?["request"]?.arrayValue ?? []
        // The SDK sends the reference in every request object and as the REQUESTREFERENCE header; the answer echoes it.
        let reference = objects.first?["requestreference"]?.stringValue ?? request.header("REQUESTREFERENCE") ?? ""
        func answer(_ items: [JSONValue], reference: String = reference) -> HTTPServerResponse {
            let body: JSONValue = [
                "requestreference": .string(reference), "version": "1.00", "response": .array(items),
                "secrand": .string(String(UInt64.random(in: 0...UInt64.max), radix: 36)),
            ]
            return .json(body.serialized())
        }
        guard let envelope, envelope.objectValue != nil, !objects.isEmpty else {
            return answer([SimulatorEngine.item("ERROR", code: "10205", message: "Malformed JSON")])
        }
        guard envelope["version"]?.stringValue == "1.00" else {
            return answer([SimulatorEngine.item("ERROR", code: "30007", message: "Invalid version number")])
        }
        if let site = objects.lazy.compactMap({ $0["sitereference"]?.stringValue ?? $0["filter"]?["sitereference"]?[0]?["value"]?.stringValue }).first,
           let sites = configuration.siteReferences, !sites.contains(site) {
            return answer([SimulatorEngine.item("ERROR", code: "30006", message: "Invalid sitereference for alias")])
        }
        var items: [JSONValue] = []
        var delivery = SimulatorReply.Delivery.answer
        for object in objects {
            let (types, fields) = merged(payload: [:], requestObject: object)
            guard case .success(let types) = types else {
                if case .failure(let error) = types { items.append(error.item) }
                continue
            }
            guard let reply = decide(types, fields, requestReference: object["requestreference"]?.stringValue, engine: engine,
                                     configuration: configuration, holds: holds) else { return .connectionReset }
            items += reply.items
            if delivery == .answer { delivery = reply.delivery }
        }
        switch delivery {
        case .serverError: return .text("internal server error\n", status: 500)
        case .unavailable: return .text("service unavailable\n", status: 503)
        case .connectionReset: return .connectionReset
        case .slow(let seconds):
            Thread.sleep(forTimeInterval: seconds)
            return answer(items)
        case .forged:
            // No signature on this transport: the analogue of a forged answer is one that is not for this request.
            return answer(items, reference: "W9-" + String(UInt32.random(in: 0...UInt32.max), radix: 36))
        case .answer: return answer(items)
        }
    }

    // MARK: Helpers

    /// One request decided by the engine, with the test holds and the query delay around it; nil when a hold drops it
    /// unprocessed (the connection is reset).
    static func decide(
        _ types: [String], _ fields: JSONValue, requestReference: String? = nil, engine: SimulatorEngine,
        configuration: GatewaySimulatorConfiguration, holds: SimulatorHolds
    ) -> SimulatorReply? {
        var orderReference = fields["orderreference"]?.stringValue ?? fields["filter"]?["orderreference"]?[0]?["value"]?.stringValue ?? ""
        if orderReference.isEmpty, let target = (fields["parenttransactionreference"] ?? fields["filter"]?["transactionreference"]?[0]?["value"])?.stringValue {
            // An operation names its AUTH by transaction reference: holds catch it by that AUTH's order reference.
            orderReference = engine.ledger.records(matching: [("transactionreference", [target])], limit: 1).first?["orderreference"]?.stringValue ?? ""
        }
        if holds.losesUnprocessed(requestTypes: types, orderReference: orderReference) { return nil }
        var reply = engine.handle(requestTypes: types, fields: fields, requestReference: requestReference)
        if holds.losesProcessed(requestTypes: types, orderReference: orderReference) { reply = SimulatorReply(items: reply.items, delivery: .connectionReset) }
        holds.awaitRelease(requestTypes: types, orderReference: orderReference)
        if configuration.latencySeconds > 0 { Thread.sleep(forTimeInterval: configuration.latencySeconds) }
        if types == ["TRANSACTIONQUERY"], configuration.queryDelaySeconds > 0 {
            // The answer reflects the ledger when the query arrived; delivering it later lets concurrent queries overlap.
            Thread.sleep(forTimeInterval: engine.dice.next() * configuration.queryDelaySeconds)
        }
        return reply
    }

    /// Request types and fields of a request: the JWT payload's fields overlaid by the request object's. Request
    /// types come from `requesttypedescriptions` (a list) or the singular `requesttypedescription` (which the SDK's
    /// tests use), in the payload or the request object (the same list in both is one list). Both forms on one
    /// request is 60040 "Can not specify both requesttypedescription and requesttypedescriptions on a single
    /// request" (errormessages.json); the payload and request object naming different lists, or neither naming
    /// any, is 60018 "Invalid requesttype".
    static func merged(payload: JSONValue, requestObject: JSONValue) -> (types: Result<[String], SimulatorReplyError>, fields: JSONValue) {
        var fields = payload.objectValue == nil ? JSONValue.object([]) : payload
        for (key, value) in requestObject.objectValue ?? []
        where !["requesttypedescriptions", "requesttypedescription", "requestid", "requestreference", "versioninfo"].contains(key) {
            fields.set(value, forKey: key)
        }
        func types(_ object: JSONValue) -> Result<[String]?, SimulatorReplyError> {
            let plural = object["requesttypedescriptions"]
            let singular = object["requesttypedescription"]
            if plural != nil, singular != nil {
                return .failure(.init(SimulatorEngine.item("ERROR", code: "60040",
                                                           message: "Can not specify both requesttypedescription and requesttypedescriptions on a single request")))
            }
            if let singular { return singular.stringValue.map { .success([$0]) } ?? .failure(invalidType) }
            guard let plural else { return .success(nil) }
            guard let list = plural.arrayValue?.compactMap(\.stringValue), list.count == plural.arrayValue?.count else { return .failure(invalidType) }
            return .success(list)
        }
        let invalidType = SimulatorReplyError(SimulatorEngine.item("ERROR", code: "60018", message: "Invalid requesttype"))
        switch (types(payload), types(requestObject)) {
        case (.failure(let error), _), (_, .failure(let error)): return (.failure(error), fields)
        case (.success(let fromPayload), .success(let fromRequest)):
            if let fromPayload, let fromRequest, fromPayload != fromRequest { return (.failure(invalidType), fields) }
            return (.success(fromPayload ?? fromRequest ?? []), fields)
        }
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

    static func signedAnswer(_ items: [JSONValue], signer: JWTSigner) -> HTTPServerResponse {
        let claims: JSONValue = [
            "iat": .integer(Int64(Date().timeIntervalSince1970)),
            "payload": ["requestreference": .string(requestReference()), "version": "1.00", "response": .array(items),
                        "secrand": .string(String(UInt64.random(in: 0...UInt64.max), radix: 36))],
        ]
        let body: JSONValue = ["jwt": .string(signer.sign(claims))]
        return .json(body.serialized())
    }

    static func plainError(_ code: String, _ message: String) -> HTTPServerResponse {
        let body: JSONValue = ["errorcode": .string(code), "errormessage": .string(message)]
        return .json(body.serialized())
    }

    static func requestReference() -> String { "W9-" + String(UInt32.random(in: 0...UInt32.max), radix: 36) }
}
