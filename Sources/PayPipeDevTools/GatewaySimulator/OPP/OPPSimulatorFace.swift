import Foundation
import HTTP
import JWT
import PaymentStages
import Pipeline
import Synchronization

/// The simulator's OPP face (docs/connectors.md): `POST /v1/payments` (PA/DB), `POST /v1/payments/{id}` (CP/RV/RF),
/// `GET /v1/payments/{id}`, `GET /v3/query?entityId=…&merchantTransactionId=…`, form-encoded as OPP takes them. A query
/// of a reference the entity holds nothing under is answered as OPP does: HTTP 404 with `700.400.580`.
///
/// Authentication as OPP documents it (`Authorization: Bearer <token>` with `entityId`) or as PAY.ON's own Python
/// wrapper (PyPI `opp` 1.3.1) still sends it: `authentication.userId`, `authentication.password`,
/// `authentication.entityId` body (or query) parameters. Fields are validated like the API: a missing or malformed one
/// is `200.300.404` "invalid or missing parameter" (HTTP 400), bad credentials `800.900.300` (HTTP 401).
///
/// Behaviour by amount (``SimulatorBehaviour``, the amount's minor units): `…51` declined `800.100.151`, `…99` recorded
/// as successful but answered `900.100.300` (timeout, uncertain), `…94` `000.400.020` (review), `…95` `000.200.000`
/// (pending), `…91` `200.300.404`, `…97` HTTP 500; lost and slow answers as the Trust Payments face. Success is
/// `000.100.110` (integrator test mode) when the request carries `testMode`, as the wrapper's test modes do, else
/// `000.000.000`.
public final class OPPSimulatorFace: Sendable {
    /// One payment (or back-office operation) as OPP returns it, plus its minor-unit amounts.
    struct Payment: Sendable {
        var answer: JSONValue
        let reference: String?
        let amountMinor: Int64
        var captured: Int64 = 0
        var refunded: Int64 = 0
        var reversed = false
        /// A back-office transaction's payment (its `referencedId`); nil for an authorisation (PA or DB).
        var parent: String? = nil
    }

    let payments = Mutex<[String: Payment]>([:])
    /// Registrations made by a storing payment (`createRegistration=true`, docs/recurring.md): by registration id.
    let registrations = Mutex<[String: Registration]>([:])

    /// What a registration holds: its entity, the storing payment's brand and card summary, and the initial
    /// transaction id a repeated payment must name.
    struct Registration: Sendable {
        let entity: String
        let brand: String
        let card: JSONValue?
        let initialTransactionId: String
    }
    private let sequence = Mutex(0)

    init() {}

    static func paths(_ path: String) -> Bool { path.hasPrefix("/v1/payments") || path == "/v3/query" || path.hasPrefix(registrationsPrefix) }

    static let registrationsPrefix = "/v1/registrations/"

    /// The registration id of `POST /v1/registrations/{id}/payments`, or nil for another path.
    static func registrationPayment(_ path: String) -> String? {
        guard path.hasPrefix(registrationsPrefix), path.hasSuffix("/payments") else { return nil }
        let id = path.dropFirst(registrationsPrefix.count).dropLast("/payments".count)
        return id.isEmpty || id.contains("/") ? nil : String(id)
    }

    func route(_ request: HTTPServerRequest, engine: SimulatorEngine, configuration: GatewaySimulatorConfiguration, holds: SimulatorHolds) -> HTTPServerResponse {
        let body = request.method == "POST" ? OPPWire.formDecode(String(decoding: request.body, as: UTF8.self)) : []
        guard let body else { return Self.error("200.300.404", "invalid or missing parameter: body is not form-encoded") }
        var fields: [String: String] = request.query
        for (key, value) in body { fields[key] = value }
        guard let entity = Self.authenticatedEntity(request, fields: fields, configuration: configuration) else {
            return Self.error("800.900.300", "invalid authentication information", status: 401)
        }
        if request.method == "POST" {
            // For contract tests (`GET /_sim/requests`): the form as received, without the legacy password.
            engine.ledger.capture([
                "path": .string(request.path), "contentType": .string(request.header("Content-Type") ?? ""),
                "bearer": .bool(request.header("Authorization")?.lowercased().hasPrefix("bearer ") == true),
                "form": .object(body.filter { $0.key != "authentication.password" }.map { (key: $0.key, value: .string($0.value)) }),
            ])
        }
        let id = request.path.hasPrefix("/v1/payments/") ? String(request.path.dropFirst("/v1/payments/".count)) : nil
        if request.method == "POST", let registrationId = Self.registrationPayment(request.path) {
            // A repeated (merchant-initiated) payment on a registration of this entity [doc, reseller: primeiropay repeated-payment].
            guard let registration = registrations.withLock({ $0[registrationId] }), registration.entity == entity else {
                return Self.error("700.400.580", "cannot find registration", status: 404)
            }
            return authorise(fields, entity: entity, engine: engine, holds: holds, registration: registration)
        }
        switch (request.method, request.path, id) {
        case ("POST", "/v1/payments", nil):
            return authorise(fields, entity: entity, engine: engine, holds: holds)
        case ("POST", _, let id?):
            return backOffice(fields, id: id, entity: entity, engine: engine, holds: holds)
        case ("GET", _, let id?):
            guard let payment = payments.withLock({ $0[id] }) else { return Self.error("700.400.580", "cannot find transaction", status: 404) }
            return .json(payment.answer.serialized())
        case ("GET", "/v3/query", nil):
            guard let reference = fields["merchantTransactionId"], !reference.isEmpty else {
                return Self.error("200.300.404", "invalid or missing parameter: merchantTransactionId")
            }
            let found = payments.withLock { $0.values.filter { $0.reference == reference && $0.answer["ndc"]?.stringValue == entity }.map(\.answer) }
                .sorted { ($0["timestamp"]?.stringValue ?? "") < ($1["timestamp"]?.stringValue ?? "") }
            // As OPP answers a reference it holds nothing under (docs/connectors.md): HTTP 404, "cannot find transaction".
            guard !found.isEmpty else { return Self.error("700.400.580", "cannot find transaction", status: 404) }
            let answer: JSONValue = ["result": ["code": "000.000.100", "description": "successful request"], "payments": .array(found)]
            return .json(answer.serialized())
        default:
            return Self.error("200.300.404", "unknown resource", status: 404)
        }
    }

    /// The entity the request may act for: a bearer token's (which must be the request's `entityId`), or the legacy
    /// `authentication.*` parameters'.
    static func authenticatedEntity(_ request: HTTPServerRequest, fields: [String: String], configuration: GatewaySimulatorConfiguration) -> String? {
        if let header = request.header("Authorization"), header.lowercased().hasPrefix("bearer ") {
            let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
            guard let entity = configuration.oppTokens[token], fields["entityId"] == entity else { return nil }
            return entity
        }
        guard let user = fields["authentication.userId"], let password = fields["authentication.password"],
              configuration.oppUsers[user] == password, let entity = fields["authentication.entityId"] ?? fields["entityId"], !entity.isEmpty else { return nil }
        return entity
    }

    /// Why an authorisation request is invalid, naming the parameter, or nil.
    /// A payment on a `registration` carries no brand and no card (the registration holds them), and must be a
    /// `REPEATED` one naming the registration's initial transaction id.
    static func invalidParameter(_ fields: [String: String], registration: Registration? = nil) -> String? {
        guard let type = fields["paymentType"], ["PA", "DB"].contains(type) else { return "paymentType" }
        guard let code = fields["currency"], let currency = Currency.alpha3(code) else { return "currency" }
        guard let amount = fields["amount"], let minor = OPPWire.minorUnits(amount, currency: currency), minor > 0 else { return "amount" }
        if registration == nil {
            guard let brand = fields["paymentBrand"], !brand.isEmpty else { return "paymentBrand" }
        }
        guard let reference = fields["merchantTransactionId"], (8...255).contains(reference.count) else { return "merchantTransactionId" }
        if let parameter = OPPStoredCredentialRules.invalidParameter(fields) { return parameter }
        if let registration {
            let prefix = OPPStoredCredentialRules.prefix
            guard fields[prefix + "mode"] == "REPEATED" else { return prefix + "mode" }
            guard fields[prefix + "initialTransactionId"] == registration.initialTransactionId else { return prefix + "initialTransactionId" }
            guard fields["card.number"] == nil, fields["applePay.paymentToken"] == nil else { return "card.number" }
            return nil
        }
        if let token = fields["applePay.paymentToken"] {
            guard (try? JSONValue.parse(Array(token.utf8)))?["header"] != nil else { return "applePay.paymentToken" }
            return nil
        }
        guard let number = fields["card.number"], (12...19).contains(number.count), number.allSatisfy(\.isNumber) else { return "card.number" }
        guard let month = fields["card.expiryMonth"], month.count == 2, let value = Int(month), (1...12).contains(value) else { return "card.expiryMonth" }
        guard let year = fields["card.expiryYear"], year.count == 4, Int(year) != nil else { return "card.expiryYear" }
        guard let cryptogram = fields["threeDSecure.verificationId"], (1...64).contains(cryptogram.count) else { return "threeDSecure.verificationId" }
        guard fields["applePay.source"].map({ ["app", "web"].contains($0) }) ?? false else { return "applePay.source" }
        return nil
    }

    private func nextId(prefix: String = "8ac7a4a1") -> String {
        let number = sequence.withLock { value in
            value += 1
            return value
        }
        return prefix + String(format: "%024x", number)
    }

    private func authorise(_ fields: [String: String], entity: String, engine: SimulatorEngine, holds: SimulatorHolds,
                           registration: Registration? = nil) -> HTTPServerResponse {
        if let parameter = Self.invalidParameter(fields, registration: registration) {
            return Self.error("200.300.404", "invalid or missing parameter: \(parameter)")
        }
        let reference = fields["merchantTransactionId"]!
        let currency = Currency.alpha3(fields["currency"]!)!
        let minor = OPPWire.minorUnits(fields["amount"]!, currency: currency)!
        if holds.losesUnprocessed(requestTypes: ["AUTH"], orderReference: reference) { return .connectionReset }
        if let fault = engine.faultBeforeProcessing() { return Self.respond(fault, body: [:]) }
        let behaviour = SimulatorBehaviour.forAmount(minor)
        let (code, description): (String, String) = switch behaviour {
        case .decline: ("800.100.151", "transaction declined (invalid card)")
        case .manualReview: ("000.400.020", "request successfully processed, manual review recommended")
        case .challenge: ("000.200.000", "transaction pending")
        case .invalidField: ("200.300.404", "invalid or missing parameter")
        case .serverError: ("", "")
        default: fields["testMode"] != nil ? ("000.100.110", "Request successfully processed in 'Merchant in Integrator Test Mode'")
            : ("000.000.000", "Transaction succeeded")
        }
        if behaviour == .serverError { return .text("internal server error\n", status: 500) }
        if behaviour == .invalidField { return Self.error(code, description) }
        let number = fields["card.number"]
        var answer: JSONValue = [
            "id": .string(nextId()), "paymentType": .string(fields["paymentType"]!),
            "paymentBrand": .string(registration?.brand ?? fields["paymentBrand"]!),
            "amount": .string(fields["amount"]!), "currency": .string(currency.code), "merchantTransactionId": .string(reference),
            "result": ["code": .string(code), "description": .string(description)],
            "buildNumber": "paypipe-sim", "timestamp": .string(Self.timestamp()), "ndc": .string(entity),
        ]
        if let number { answer.set(["bin": .string(String(number.prefix(6))), "last4Digits": .string(String(number.suffix(4)))], forKey: "card") }
        if let card = registration?.card { answer.set(card, forKey: "card") }
        if fields["createRegistration"] == "true", OPPResultCode.group(code) == .success {
            // A successful storing payment answers its registration and the initial transaction id later repeated
            // payments name (docs/recurring.md: the network's id, not OPP's `id` [secondary]).
            let registrationId = nextId(prefix: "8ac7a4a2")
            let initial = "SIM" + String(registrationId.suffix(12))
            answer.set(.string(registrationId), forKey: "registrationId")
            answer.set(["initialTransactionId": .string(initial)], forKey: "standingInstruction")
            let stored = Registration(entity: entity, brand: fields["paymentBrand"]!, card: answer["card"], initialTransactionId: initial)
            registrations.withLock { $0[registrationId] = stored }
        }
        payments.withLock { $0[answer["id"]!.stringValue!] = Payment(answer: answer, reference: reference, amountMinor: minor) }
        let group = OPPResultCode.group(code)
        engine.recordForeign(reference: reference, amountMinor: minor, currency: currency.code, authorised: group == .success || group == .review,
                             maskedPan: number.map { "\($0.prefix(6))######\($0.suffix(4))" }, extra: [("oppid", answer["id"]!), ("oppcode", .string(code))])
        holds.awaitRelease(requestTypes: ["AUTH"], orderReference: reference)
        var shown = answer
        if behaviour == .unknownError { shown.set(["code": "900.100.300", "description": "timeout, uncertain result"], forKey: "result") }
        var delivery = engine.deliveryAfterRecording(behaviour)
        if delivery == .forged {
            // No signature on this API: the analogue of a forged answer is one about another payment.
            shown.set(.string("FORGED-\(reference)"), forKey: "merchantTransactionId")
            delivery = .answer
        }
        return Self.respond(delivery, body: shown)
    }

    /// `CP`, `RV` or `RF` on `/v1/payments/{id}`, with OPP's rules as its white-label back-office pages state them
    /// [doc]: a capture of a pre-authorisation (PA) once, for all or part of it (the rest released); a reversal of an
    /// uncaptured PA; a refund of a debit (DB) by its id, or of a captured PA by its capture's (CP) id, never beyond what
    /// was captured (a refund of an uncaptured PA, or by a captured PA's own id, is refused). Amount and currency (the payment's) on `CP` and `RF`; an optional
    /// `merchantTransactionId` (8-255 characters), under which `/v3/query` finds the new transaction. One that took
    /// effect is on the operation ledger (``SimulatorEngine/recordOperation(_:)``); lost and slow answers as every
    /// operation's, test holds by the request type (`CP`, `RV`, `RF`) and the payment's merchantTransactionId.
    private func backOffice(_ fields: [String: String], id: String, entity: String, engine: SimulatorEngine, holds: SimulatorHolds) -> HTTPServerResponse {
        guard let type = fields["paymentType"], ["CP", "RV", "RF"].contains(type) else { return Self.error("200.300.404", "invalid or missing parameter: paymentType") }
        if let reference = fields["merchantTransactionId"], !(8...255).contains(reference.count) {
            return Self.error("200.300.404", "invalid or missing parameter: merchantTransactionId")
        }
        // A refund of a captured pre-authorisation references the capture (CP), as OPP's refund example does
        // (docs/connectors.md); the money is the pre-authorisation's, so `target` is the PA.
        let referenced = payments.withLock { $0[id] }
        let capture = referenced.flatMap { $0.answer["paymentType"]?.stringValue == "CP" && $0.answer["result"]?["code"]?.stringValue == "000.000.000" ? $0 : nil }
        let target = type == "RF" ? capture?.parent ?? id : id
        guard let original = payments.withLock({ $0[target] }), original.parent == nil, original.answer["ndc"]?.stringValue == entity,
              referenced?.parent == nil || capture != nil else {
            return Self.error("700.400.580", "cannot find transaction", status: 404)
        }
        if type == "RF", capture == nil, original.answer["paymentType"]?.stringValue == "PA" {
            // Refunding a captured PA by its own id is not what OPP's pages show: the simulator refuses it, so that
            // PayPipe's use of the capture's id is what tests exercise.
            return Self.error("700.400.100", "cannot refund a pre-authorisation: refund its capture (CP)")
        }
        var minor: Int64 = 0
        if type != "RV" {
            guard let code = fields["currency"], code == original.answer["currency"]?.stringValue, let currency = Currency.alpha3(code),
                  let amount = fields["amount"], let value = OPPWire.minorUnits(amount, currency: currency), value > 0 else {
                return Self.error("200.300.404", "invalid or missing parameter: amount or currency")
            }
            minor = value
        }
        let paymentReference = original.reference ?? ""
        if holds.losesUnprocessed(requestTypes: [type], orderReference: paymentReference) || engine.losesOperation() { return .connectionReset }
        let newId = nextId()
        let outcome: (code: String, description: String) = payments.withLock { all in
            guard var payment = all[target] else { return ("700.400.580", "cannot find transaction") }
            let authorisedType = payment.answer["paymentType"]?.stringValue
            let refusal = ("700.400.100", "cannot capture/refund/reverse: invalid state")
            switch type {
            case "CP":
                // One capture per pre-authorisation: "a capture is a one-time event" [doc].
                guard authorisedType == "PA", !payment.reversed, payment.captured == 0, minor <= payment.amountMinor else { return refusal }
                payment.captured = minor
            case "RV":
                guard authorisedType == "PA", payment.captured == 0, !payment.reversed else { return refusal }
                payment.reversed = true
            default:
                let capturedTotal = authorisedType == "DB" ? payment.amountMinor : payment.captured
                guard capturedTotal > 0, payment.refunded + minor <= capturedTotal else { return refusal }
                payment.refunded += minor
            }
            all[target] = payment
            return ("000.000.000", "Transaction succeeded")
        }
        let tookEffect = outcome.code.hasPrefix("000.")
        let answer = JSONValue.object(omittingAbsent: [
            ("id", .string(newId)), ("referencedId", .string(id)), ("paymentType", .string(type)),
            ("amount", .string(fields["amount"] ?? "")), ("currency", .string(fields["currency"] ?? "")),
            ("merchantTransactionId", fields["merchantTransactionId"].map(JSONValue.string)),
            ("result", ["code": .string(outcome.code), "description": .string(outcome.description)]), ("timestamp", .string(Self.timestamp())),
            ("ndc", .string(entity)),
        ])
        payments.withLock { $0[newId] = Payment(answer: answer, reference: fields["merchantTransactionId"], amountMinor: minor, parent: target) }
        if tookEffect {
            engine.recordOperation([
                ("connector", "opp"), ("requesttypedescription", .string(type)), ("requestreference", fields["merchantTransactionId"].map(JSONValue.string)),
                ("transactionreference", .string(target)), ("referencedid", capture.map { _ in .string(id) }), ("orderreference", .string(paymentReference)),
                ("baseamount", type == "RV" ? nil : .string(String(minor))), ("oppid", .string(newId)),
            ])
        }
        var delivery = engine.operationDelivery(tookEffect: tookEffect)
        if holds.losesProcessed(requestTypes: [type], orderReference: paymentReference) { delivery = .connectionReset }
        holds.awaitRelease(requestTypes: [type], orderReference: paymentReference)
        guard tookEffect else { return .json(answer.serialized(), status: 400) }
        return Self.respond(delivery, body: answer)
    }

    static func error(_ code: String, _ description: String, status: Int = 400) -> HTTPServerResponse {
        let body: JSONValue = ["result": ["code": .string(code), "description": .string(description)], "buildNumber": "paypipe-sim",
                               "timestamp": .string(timestamp())]
        return .json(body.serialized(), status: status)
    }

    static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSSZ"
        return formatter.string(from: Date())
    }

    /// The HTTP response of a JSON answer delivered as `delivery` says (shared by the connector faces).
    static func respond(_ delivery: SimulatorReply.Delivery, body: JSONValue) -> HTTPServerResponse {
        switch delivery {
        case .answer, .forged: return .json(body.serialized())
        case .slow(let seconds):
            Thread.sleep(forTimeInterval: seconds)
            return .json(body.serialized())
        case .serverError: return .text("internal server error\n", status: 500)
        case .unavailable: return .text("service unavailable\n", status: 503)
        case .connectionReset: return .connectionReset
        }
    }
}
