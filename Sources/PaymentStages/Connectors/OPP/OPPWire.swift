import Foundation
import JWT
import Pipeline

/// OPP's wire format (other-gateways.md §2, docs/connectors.md): form-encoded `POST /v1/payments` bodies, JSON answers
/// `{id, paymentType, result {code, description}, …}`, `GET /v3/query?entityId=…&merchantTransactionId=…` for every
/// payment under one merchant transaction id, and `CP`/`RV`/`RF` on `/v1/payments/{id}`. Pure.
public enum OPPWire {
    // MARK: Form encoding

    /// `application/x-www-form-urlencoded` as browsers and `requests` write it: unreserved bytes as they are, space
    /// as `+`, every other byte `%XX`. Keys keep their order.
    public static func formEncode(_ fields: [(key: String, value: String)]) -> String {
        fields.map { "\(escape($0.key))=\(escape($0.value))" }.joined(separator: "&")
    }

    /// The pairs of a form body or query string, in order; nil when a `%` escape is broken or the text is not UTF-8.
    public static func formDecode(_ text: String) -> [(key: String, value: String)]? {
        var pairs: [(key: String, value: String)] = []
        for part in text.split(separator: "&", omittingEmptySubsequences: true) {
            let halves = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = unescape(halves[0]), let value = halves.count > 1 ? unescape(halves[1]) : "" else { return nil }
            pairs.append((key, value))
        }
        return pairs
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "): out += "+"
            default: out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    static func unescape(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    // MARK: Amounts

    /// `amount` as OPP writes it, a decimal string with a dot (N10.N2 [secondary]): minor units divided by 10^exponent
    /// of the currency's ISO 4217 exponent (`2000` GBP → `"20.00"`, `1500` KWD → `"1.500"`). Zero-exponent currencies
    /// (JPY, KRW, …) are refused: whether OPP wants `"500"` or `"500.00"` for them is [UNCONFIRMED].
    public static func amount(minor: Int64, currency: Currency) throws(ConnectorBuildError) -> String {
        guard minor > 0 else { throw ConnectorBuildError(AuthorizeError.invalidAmount("the amount must be positive")) }
        guard currency.minorUnits > 0 else {
            throw ConnectorBuildError(code: "amount_not_representable",
                                      reason: "OPP's amount format for zero-exponent currencies (\(currency.code)) is unconfirmed")
        }
        var scale: Int64 = 1
        for _ in 0..<currency.minorUnits { scale *= 10 }
        let fraction = String(minor % scale)
        let text = "\(minor / scale).\(String(repeating: "0", count: currency.minorUnits - fraction.count))\(fraction)"
        // N10.N2: at most ten integer digits.
        guard minor / scale < 10_000_000_000 else {
            throw ConnectorBuildError(AuthorizeError.invalidAmount("the amount \(text) has more than ten integer digits"))
        }
        return text
    }

    /// Minor units of an OPP amount string in `currency`, nil when it is not exactly that currency's form.
    public static func minorUnits(_ text: String, currency: Currency) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard currency.minorUnits > 0, parts.count == 2, parts[1].count == currency.minorUnits, !parts[0].isEmpty,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let whole = Int64(parts[0]), let fraction = Int64(parts[1]) else { return nil }
        var scale: Int64 = 1
        for _ in 0..<currency.minorUnits { scale *= 10 }
        return whole * scale + fraction
    }

    // MARK: Requests

    /// The stored authorisation request: its form fields as the `payload` object of strings (the stored-request shape
    /// every connector shares, ``GatewayRequestStore``), in sending order, without
    /// `entityId` and `merchantTransactionId` (added at send time, ``paymentForm(_:entityId:reference:)``) and
    /// without credentials.
    /// - merchant-decrypts: `paymentBrand` (the merchant's), `card.number` (the DPAN), `card.expiryMonth`/`expiryYear`,
    ///   `threeDSecure.verificationId` (the cryptogram), `threeDSecure.eci` when the token has one, `applePay.source=app`
    ///   [secondary: HyperPay's parameter digest];
    /// - gateway-decrypts: `paymentBrand` `APPLEPAY` (or `APPLEPAYTKN`) and `applePay.paymentToken`, Apple's token JSON
    ///   [secondary: TotalProcessing's OPP module].
    public static func authorizationRequest(
        settings: OPPSettings, mode: MerchantDocument.Gateway.Mode, payment: GatewayPaymentDetails, data: StoredPaymentData?
    ) throws(ConnectorBuildError) -> GatewayRequest {
        if let problem = settings.problem(mode: mode) {
            throw .notConfigured(problem)
        }
        let (currency, minor) = try ConnectorRequestBuilder.amount(payment)
        var fields: [(key: String, value: String)] = [
            ("amount", try amount(minor: minor, currency: currency)),
            ("currency", currency.code),
            ("paymentType", settings.resolvedPaymentType),
        ]
        if case .charge(let reason, let usage, let references) = payment.storedCredential {
            return try OPPStoredCredentials.merchantInitiatedRequest(
                fields, reason: reason, usage: usage, references: references, orderReference: payment.gatewayOrderReference,
                paymentType: settings.resolvedPaymentType)
        }
        fields.append(("paymentBrand", settings.resolvedBrand))
        switch mode {
        case .merchantDecrypts:
            let card = try NetworkTokenFields(data, currency: currency, amount: minor)
            fields += [("card.number", card.dpan), ("card.expiryMonth", card.expiryMonth), ("card.expiryYear", card.expiryYear),
                       ("threeDSecure.verificationId", card.cryptogram)]
            if let eci = card.eci { fields.append(("threeDSecure.eci", eci)) }
            fields.append(("applePay.source", "app"))
        case .gatewayDecrypts:
            guard let token = data?.walletToken, !token.isEmpty else {
                throw ConnectorBuildError(AuthorizeError.cardDataMissing("gateway-decrypts mode needs the stored Apple Pay token, which is absent"))
            }
            fields.append(("applePay.paymentToken", try paymentToken(token)))
        }
        if case .store(let usage) = payment.storedCredential { fields += OPPStoredCredentials.initialParameters(usage) }
        return GatewayRequest(orderReference: payment.gatewayOrderReference, requestTypes: [settings.resolvedPaymentType],
                              claims: ["payload": .object(fields.map { ($0.key, .string($0.value)) })])
    }

    /// `applePay.paymentToken`: the `PKPaymentToken.paymentData` JSON (version, data, signature, header) whatever form
    /// the job carried. [UNCONFIRMED]: no primary ACI page shows whether the whole `PKPaymentToken` is also accepted.
    static func paymentToken(_ text: String) throws(ConnectorBuildError) -> String {
        let wrapped: String
        do {
            wrapped = try ApplePayPaymentForm.walletToken(text)
        } catch {
            throw ConnectorBuildError(error)
        }
        // `walletToken` normalises to {"token": {"paymentData": …}}.
        guard let paymentData = (try? JSONValue.parse(Array(wrapped.utf8)))?["token"]?["paymentData"] else {
            throw ConnectorBuildError(AuthorizeError.invalidCardData("the Apple Pay token has no paymentData"))
        }
        return paymentData.serializedString
    }

    /// The form of one authorisation: `entityId`, the stored fields, then `merchantTransactionId` (the per-payment
    /// reconciliation key, AN255, at least 8 characters [secondary]).
    public static func paymentForm(_ request: GatewayRequest, entityId: String, reference: String) -> [(key: String, value: String)] {
        let stored = (request.claims["payload"]?.objectValue ?? []).compactMap { entry in entry.value.stringValue.map { (key: entry.key, value: $0) } }
        return [("entityId", entityId)] + stored.filter { $0.key != "entityId" && $0.key != "merchantTransactionId" }
            + [("merchantTransactionId", reference)]
    }

    /// A back-office operation on `/v1/payments/{id}`: `CP` and `RF` with amount and currency, `RV` with neither
    /// [doc: the OPP wrapper's `Captures`, `Refunds`, `Reversals`], and `reference`, when given, as the operation's own
    /// `merchantTransactionId`: OPP white-label pages send one on back-office requests and advise a unique one every
    /// time [doc: docs.cardcorp.com "Refund a payment", an RF with `merchantTransactionId`; for CP and RV the same field
    /// is [UNCONFIRMED] beyond that advice]. It is what ``queryPath(entityId:reference:)`` finds a lost answer by.
    public static func operationForm(
        _ operation: ConnectorOperation, entityId: String, reference: String? = nil
    ) throws(ConnectorBuildError) -> (path: String, form: [(key: String, value: String)]) {
        let tail: [(key: String, value: String)] = reference.map { [("merchantTransactionId", $0)] } ?? []
        switch operation {
        case .capture(let id, let minor, let code), .refund(let id, let minor, let code):
            guard let currency = Currency.alpha3(code) else {
                throw ConnectorBuildError(AuthorizeError.invalidCurrency("'\(code.prefix(8))' is not an ISO 4217 alpha-3 currency code"))
            }
            let type = if case .capture = operation { "CP" } else { "RF" }
            return ("/v1/payments/\(escape(id))", [("entityId", entityId), ("amount", try amount(minor: minor, currency: currency)),
                                                   ("currency", currency.code), ("paymentType", type)] + tail)
        case .void(let id):
            return ("/v1/payments/\(escape(id))", [("entityId", entityId), ("paymentType", "RV")] + tail)
        }
    }

    /// The payment a refund (`RF` on `/v1/payments/{id}`) references: a pre-authorisation captured by a `CP` is
    /// refunded by the **capture's id**, a debit (`DB`) by its own [doc: docs.cardcorp.com "Refund a payment", an OPP
    /// white-label page, refunds "a debit (DB) or captured pre-authorisation (PA->CP)" and its worked example sends
    /// the `RF` to the id of the `CP` answer; docs.latam.ppro.com and Peach Payments' pages say only "referencing its
    /// payment.id"]. Whether OPP also accepts the `PA`'s id is [UNCONFIRMED] (docs/connectors.md).
    public static func refundReference(payment: String, capture: String?) -> String {
        capture ?? payment
    }

    /// The `merchantTransactionId` of one operation (AN255, at least 8 characters [secondary]): `op-` and its row id,
    /// after the payment's reference so two databases' operations never share one at the same entity.
    public static func operationReference(paymentReference: String, operationRowId: Int64) -> String {
        "\(paymentReference.prefix(200))-op\(operationRowId)"
    }

    /// What a `/v3/query` answer under an operation's own `merchantTransactionId` shows of it: each record of the
    /// payment `transactionId` (its `referencedId`, when the record carries one) as a
    /// ``OperationProtocol/TransactionRecord``. A failed query, a record of another reference (the filter not applied)
    /// or one without `paymentType` is a failure: query again, never decide on it.
    public static func operationEvidence(
        _ answer: JSONValue, status: Int = 200, reference: String, transactionId: String, currency: String, sandbox: Bool
    ) -> Result<OperationProtocol.Evidence, OperationQueryFailure> {
        if isNotFound(answer, status: status) { return .success(.transactions([])) }
        guard let code = answer["result"]?["code"]?.stringValue, OPPResultCode.group(code) == .success, let records = answer["payments"]?.arrayValue else {
            return .failure(OperationQueryFailure(code: String((answer["result"]?["code"]?.stringValue ?? "paypipe.invalid_response").prefix(32)),
                                                  reason: "the query failed or returned no list"))
        }
        var found: [OperationProtocol.TransactionRecord] = []
        for record in records {
            guard record["merchantTransactionId"]?.stringValue == reference, let type = record["paymentType"]?.stringValue,
                  let resultCode = record["result"]?["code"]?.stringValue else {
                return .failure(OperationQueryFailure(code: "paypipe.query_unrecognised", reason: "a record is not this operation's"))
            }
            if let parent = record["referencedId"]?.stringValue, parent != transactionId { continue }
            let kind: OperationRequest.Kind? = switch type {
            case "CP": .capture
            case "RV": .void
            case "RF": .refund
            default: nil
            }
            let minor = Currency.alpha3(currency).flatMap { currency in record["amount"]?.stringValue.flatMap { minorUnits($0, currency: currency) } }
            let result: OperationProtocol.TransactionRecord.Result = switch OPPResultCode.outcome(resultCode, sandbox: sandbox).outcome {
            case .authorized: .succeeded
            case .uncertain, .transient, .needsReview: .pending
            case .declined, .permanentError: .rejected
            }
            found.append(OperationProtocol.TransactionRecord(kind: kind, amount: minor, result: result, id: record["id"]?.stringValue.map { String($0.prefix(64)) }))
        }
        return .success(.transactions(found))
    }

    /// Whether a `/v3/query` answer says OPP holds no transaction under the queried `merchantTransactionId`:
    /// **HTTP 404 with `700.400.580`** "cannot find transaction" (docs/connectors.md: the code [doc: ACI's result-code
    /// list], its status on this query [secondary]). Both are required; any other 4xx or 5xx, or this code with another
    /// status, proves nothing (inconclusive, asked again).
    public static func isNotFound(_ answer: JSONValue, status: Int) -> Bool {
        status == 404 && answer["result"]?["code"]?.stringValue == notFoundCode
    }

    /// OPP's "cannot find transaction".
    public static let notFoundCode = "700.400.580"

    /// `/v3/query?entityId=…&merchantTransactionId=…` [doc].
    public static func queryPath(entityId: String, reference: String) -> String {
        "/v3/query?" + formEncode([("entityId", entityId), ("merchantTransactionId", reference)])
    }

    // MARK: Answers

    /// The result of one payment answer (or query record): its `result.code` through ``OPPResultCode``.
    public static func result(_ answer: JSONValue, sandbox: Bool) -> GatewayResult {
        guard let code = answer["result"]?["code"]?.stringValue else {
            return .local(.uncertain, code: "paypipe.invalid_response", message: "answer has no result.code")
        }
        let (outcome, reason) = OPPResultCode.outcome(code, sandbox: sandbox)
        let card = answer["card"]
        var result = GatewayResult(
            outcome: outcome, errorCode: String(code.prefix(32)), errorMessage: answer["result"]?["description"]?.stringValue.map { String($0.prefix(500)) },
            transactionReference: answer["id"]?.stringValue.map { String($0.prefix(64)) },
            acquirerResponseCode: answer["resultDetails"]?["ExtendedDescription"]?.stringValue.map { String($0.prefix(64)) },
            authCode: answer["resultDetails"]?["AuthCode"]?.stringValue.map { String($0.prefix(16)) },
            maskedPan: card?["bin"]?.stringValue.flatMap { bin in card?["last4Digits"]?.stringValue.map { "\(bin.prefix(6))######\($0.suffix(4))" } },
            reason: reason)
        result.credentialReferences = OPPStoredCredentials.references(answer)
        return result
    }

    /// Interprets a `/v3/query` answer for the payment described by `expected` (amount in minor units, currency,
    /// the reference queried). "No such payment" is proven by OPP's own "not found" (``isNotFound(_:status:)``), or by
    /// a successful query whose `payments` list (all matches [doc]; the list's key is [UNCONFIRMED]) holds no
    /// authorisation (`PA`/`DB`). Two authorisations under one
    /// reference, or one whose reference, amount or currency differs, are ambiguous: needs review, never adopted,
    /// never resent. A record without a final outcome (pending, communication error) proves nothing.
    public static func queryResult(_ answer: JSONValue, status: Int = 200, expected: TransactionQueryResult.Expected, sandbox: Bool) -> TransactionQueryResult {
        if isNotFound(answer, status: status) { return .notFound }
        guard let code = answer["result"]?["code"]?.stringValue else {
            return .inconclusive(code: "paypipe.invalid_response", reason: "query answer has no result.code")
        }
        let records = answer["payments"]?.arrayValue
        guard OPPResultCode.group(code) == .success, let records else {
            return .inconclusive(code: String(code.prefix(32)), reason: "query failed: \(answer["result"]?["description"]?.stringValue.map { String($0.prefix(200)) } ?? "no list")")
        }
        let auths = records.filter { ["PA", "DB"].contains($0["paymentType"]?.stringValue ?? "") }
        guard records.allSatisfy({ $0["paymentType"]?.stringValue != nil }) else {
            return .inconclusive(code: "paypipe.query_unrecognised", reason: "a record has no paymentType")
        }
        guard let record = auths.first else { return .notFound }
        guard auths.count == 1, matches(record, expected) else {
            var review = GatewayResult.local(.needsReview, code: "paypipe.query_ambiguous",
                                             message: "\(auths.count) authorisation(s) under one payment's merchantTransactionId, or one that is not this payment's")
            review.reason = "gateway_query_ambiguous"
            return .found(review)
        }
        let adopted = result(record, sandbox: sandbox)
        switch adopted.outcome {
        case .uncertain, .transient:
            return .inconclusive(code: adopted.errorCode ?? "paypipe.query_uncertain", reason: "the recorded payment has no final outcome yet")
        case .authorized, .declined, .permanentError, .needsReview:
            return .found(adopted)
        }
    }

    static func matches(_ record: JSONValue, _ expected: TransactionQueryResult.Expected) -> Bool {
        if let reference = expected.orderReference, record["merchantTransactionId"]?.stringValue != reference { return false }
        if let code = expected.currency {
            guard record["currency"]?.stringValue == code, let currency = Currency.alpha3(code) else { return false }
            if let minor = expected.amountMinor, record["amount"]?.stringValue.flatMap({ minorUnits($0, currency: currency) }) != minor { return false }
        }
        return true
    }
}
