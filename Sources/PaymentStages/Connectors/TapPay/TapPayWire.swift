import Foundation
import JWT
import Pipeline

/// TapPay's wire format (other-gateways.md §1, docs/connectors.md): JSON `POST`s with `x-api-key` [doc][sdk] to
/// `/tpc/payment/pay-by-prime` [sdk], the Record API `/tpc/transaction/query` [doc], `/tpc/transaction/cap` [doc] and
/// `/tpc/transaction/refund` [sdk]. Pure.
public enum TapPayWire {
    public static let payByPrimePath = "/tpc/payment/pay-by-prime"
    public static let recordPath = "/tpc/transaction/query"
    public static let capturePath = "/tpc/transaction/cap"
    public static let refundPath = "/tpc/transaction/refund"
    /// The stored request's member that is PayPipe's, never sent: the prime's publish time (ms since the epoch).
    static let publishedAtKey = "paypipe.primePublishedAt"
    /// The stored request's member that is PayPipe's, never sent: `deferred` for a deferred payment's prime.
    static let primeKindKey = "paypipe.primeKind"

    // MARK: Amounts

    /// TapPay's `amount` (an integer): TWD in whole dollars, so an amount that is not a multiple of 100 minor units is
    /// refused (`amount_not_representable`); HKD, MYR and USD in cents [doc]. Other currencies are refused: no source
    /// gives their unit.
    public static func amount(minor: Int64, currency: Currency) throws(ConnectorBuildError) -> Int64 {
        switch currency.code {
        case "TWD":
            guard minor % 100 == 0 else {
                throw ConnectorBuildError(code: "amount_not_representable", reason: "TapPay takes TWD in whole dollars; \(minor) minor units is not one")
            }
            return minor / 100
        case "HKD", "MYR", "USD":
            return minor
        default:
            throw ConnectorBuildError(AuthorizeError.invalidCurrency("TapPay amounts are documented for TWD, HKD, MYR and USD only, not \(currency.code)"))
        }
    }

    /// Minor units of a TapPay amount in `currency` (the inverse of ``amount(minor:currency:)``).
    public static func minorUnits(_ amount: Int64, currency: String) -> Int64? {
        switch currency {
        case "TWD": amount.multipliedReportingOverflow(by: 100).overflow ? nil : amount * 100
        case "HKD", "MYR", "USD": amount
        default: nil
        }
    }

    // MARK: Requests

    /// The stored Pay-by-Prime request (the `payload` object, the stored-request shape every connector shares): every
    /// key of the body except the credentials (`partner_key`, `merchant_id`)
    /// and `bank_transaction_id`, which are added at send time (``payByPrimeBody(_:merchantId:partnerKey:reference:)``).
    /// `cardholder` has every key, `""` when unknown [sdk]; `order_number` is the merchant's order reference;
    /// `remember` is false (not supported for Apple Pay [doc]).
    public static func payByPrimeRequest(settings: TapPaySettings, payment: GatewayPaymentDetails, data: StoredPaymentData?) throws(ConnectorBuildError) -> GatewayRequest {
        if let problem = settings.problem(mode: .gatewayDecrypts) { throw .notConfigured(problem) }
        let (currency, minor) = try ConnectorRequestBuilder.amount(payment)
        let amount = try amount(minor: minor, currency: currency)
        guard let prime = data?.tapPayPrime, !prime.isEmpty else {
            throw ConnectorBuildError(AuthorizeError.cardDataMissing("a TapPay merchant's payment needs the job's tapPayPrime, which is absent"))
        }
        let contact = data?.billingContact ?? data?.shippingContact ?? [:]
        let name = [contact["givenName"], contact["familyName"]].compactMap { $0 }.joined(separator: " ")
        var body: [(key: String, value: JSONValue)] = [
            ("prime", .string(prime)),
            ("amount", .integer(amount)),
            ("currency", .string(currency.code)),
            ("details", .string(settings.details ?? String("Order \(payment.orderReference ?? payment.gatewayOrderReference)".prefix(TapPaySettings.maximumDetailsLength)))),
            ("order_number", .string(payment.orderReference ?? payment.gatewayOrderReference)),
            ("cardholder", [
                "phone_number": .string(contact["phoneNumber"] ?? ""), "name": .string(name), "email": .string(contact["emailAddress"] ?? ""),
                "zip_code": .string(contact["postalCode"] ?? ""), "address": .string(contact["addressLines"] ?? contact["street"] ?? ""),
                "national_id": "",
            ]),
            ("remember", false),
        ]
        if let days = settings.delayCaptureInDays { body.append(("delay_capture_in_days", .integer(Int64(days)))) }
        if let published = data?.tapPayPrimePublishedAt {
            body.append((publishedAtKey, .integer(Int64((published.timeIntervalSince1970 * 1000).rounded(.down)))))
        }
        if data?.tapPayPrimeKind == .deferred { body.append((primeKindKey, .string(TapPayPrimeAge.Kind.deferred.rawValue))) }
        return GatewayRequest(orderReference: payment.gatewayOrderReference, requestTypes: ["pay-by-prime"], claims: ["payload": .object(body)])
    }

    /// The body sent: `partner_key` and `merchant_id` first [sdk], the stored keys, `bank_transaction_id` (the
    /// per-payment reconciliation key; its format and length limits are [UNCONFIRMED], PayPipe's reference is at most
    /// 25 characters of `[A-Za-z0-9.-_]`), PayPipe's own member removed.
    public static func payByPrimeBody(_ request: GatewayRequest, merchantId: String, partnerKey: String, reference: String) -> JSONValue {
        let stored = (request.claims["payload"]?.objectValue ?? []).filter { !["partner_key", "merchant_id", "bank_transaction_id", publishedAtKey, primeKindKey].contains($0.key) }
        return .object([("partner_key", .string(partnerKey)), ("merchant_id", .string(merchantId))] + stored
            + [("bank_transaction_id", .string(reference))])
    }

    /// When the stored request's prime was published, if known.
    public static func primePublishedAt(_ request: GatewayRequest) -> Date? {
        request.claims["payload"]?[publishedAtKey]?.int64Value.map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    /// The stored request's prime kind (ordinary unless marked deferred).
    public static func primeKind(_ request: GatewayRequest) -> TapPayPrimeAge.Kind {
        request.claims["payload"]?[primeKindKey]?.stringValue.flatMap(TapPayPrimeAge.Kind.init(rawValue:)) ?? .ordinary
    }

    /// The Record API query for one payment: `filters.bank_transaction_id` plus a `time` window around the attempt (in
    /// case `time` is mandatory [UNCONFIRMED]), newest first, one page of at most 200 records [doc].
    public static func recordQuery(partnerKey: String, reference: String, around now: Date, window: TimeInterval = 86_400) -> JSONValue {
        records(partnerKey: partnerKey, filter: ("bank_transaction_id", reference), around: now, window: window)
    }

    /// One page of at most 200 records [doc] matching `filter`, within `window` before `now`, newest first.
    static func records(partnerKey: String, filter: (key: String, value: String), around now: Date, window: TimeInterval) -> JSONValue {
        let millis = { (date: Date) in Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
        return [
            "partner_key": .string(partnerKey),
            "records_per_page": 200,
            "page": 0,
            "filters": .object([
                ("time", ["start_time": .integer(millis(now.addingTimeInterval(-window))), "end_time": .integer(millis(now.addingTimeInterval(600)))]),
                (filter.key, .string(filter.value)),
            ]),
            "order_by": ["attribute": "time", "is_descending": true],
        ]
    }

    /// A capture (full only [doc]) or refund (full or partial [sdk]) by `rec_trade_id`; nil for a void (TapPay
    /// documents no void API, ``TapPayConnector/capabilities``). A refund always carries its `amount`: one TapPay cannot
    /// express (TWD not in whole dollars) is refused, never sent without it (which would refund the rest in full).
    public static func operationBody(_ operation: ConnectorOperation, partnerKey: String) throws(ConnectorBuildError) -> (path: String, body: JSONValue)? {
        switch operation {
        case .capture(let id, _, _):
            return (capturePath, ["partner_key": .string(partnerKey), "rec_trade_id": .string(id)])
        case .refund(let id, let minor, let code):
            guard let currency = Currency.alpha3(code) else {
                throw ConnectorBuildError(AuthorizeError.invalidCurrency("'\(code.prefix(8))' is not an ISO 4217 alpha-3 currency code"))
            }
            return (refundPath, ["partner_key": .string(partnerKey), "rec_trade_id": .string(id), "amount": .integer(try amount(minor: minor, currency: currency))])
        case .void:
            return nil
        }
    }

    /// The Record API query for one trade by `rec_trade_id` [doc: a documented filter], with a `time` window of the
    /// last 90 days in case `time` is mandatory [UNCONFIRMED] (an operation comes days after its AUTH).
    public static func tradeQuery(partnerKey: String, recTradeId: String, around now: Date) -> JSONValue {
        records(partnerKey: partnerKey, filter: ("rec_trade_id", recTradeId), around: now, window: 90 * 86_400)
    }

    /// The trade `recTradeId` as a Record API answer shows it: `is_captured` and the cumulative `refund_amount`
    /// (in minor units of `currency`) [doc]; nil when the answer has no record of it; a failed query, or records of
    /// other trades only (the filter not applied) or two of it, a failure.
    public static func tradeEvidence(_ answer: JSONValue, recTradeId: String, currency: String) -> Result<OperationProtocol.Evidence, OperationQueryFailure> {
        guard let status = answer["status"]?.int64Value, status == 0 || status == 2, let records = answer["trade_records"]?.arrayValue else {
            return .failure(OperationQueryFailure(code: answer["status"]?.int64Value.map(String.init) ?? "paypipe.invalid_response", reason: "the record query failed"))
        }
        let mine = records.filter { $0["rec_trade_id"]?.stringValue == recTradeId }
        guard mine.count == records.count, mine.count <= 1 else {
            return .failure(OperationQueryFailure(code: "paypipe.query_unrecognised", reason: "the records are not exactly this trade's"))
        }
        guard let record = mine.first else { return .success(.payment(nil)) }
        let refunded = record["refund_amount"]?.int64Value.flatMap { minorUnits($0, currency: record["currency"]?.stringValue ?? currency) }
        return .success(.payment(OperationProtocol.ShownPayment(isCaptured: record["is_captured"]?.boolValue, refundedAmount: refunded)))
    }

    // MARK: Answers

    /// The result of a Pay-by-Prime (or capture/refund) answer: `status` through ``TapPayStatus``.
    public static func result(_ answer: JSONValue) -> GatewayResult {
        guard let status = answer["status"]?.int64Value, let code = Int(exactly: status) else {
            return .local(.uncertain, code: "paypipe.invalid_response", message: "answer has no integer status")
        }
        let (outcome, reason) = TapPayStatus.outcome(code)
        let card = answer["card_info"]
        return GatewayResult(
            outcome: outcome, errorCode: String(code), errorMessage: answer["msg"]?.stringValue.map { String($0.prefix(500)) },
            transactionReference: answer["rec_trade_id"]?.stringValue.map { String($0.prefix(64)) },
            acquirerResponseCode: answer["bank_result_code"]?.stringValue.map { String($0.prefix(64)) },
            authCode: answer["auth_code"]?.stringValue.map { String($0.prefix(16)) },
            maskedPan: card?["bin_code"]?.stringValue.flatMap { bin in card?["last_four"]?.stringValue.map { "\(bin.prefix(6))######\($0.suffix(4))" } },
            reason: reason)
    }

    /// `record_status` of a trade record [doc: Record API]; the values' meanings are [UNCONFIRMED] beyond the field
    /// list: -1 error (declined), 0 authorised, 1 captured, 2 partly refunded, 3 refunded, 4 pending, 5 cancelled.
    static func recordOutcome(_ status: Int64) -> GatewayOutcome? {
        switch status {
        case -1: .declined
        case 0, 1, 2, 3: .authorized
        case 5: .needsReview
        default: nil
        }
    }

    /// Interprets a Record API answer for the payment `expected` describes: status 0 or 2 (end of list [doc]) with a
    /// `trade_records` list. No record for the reference is "not found"; two are ambiguous (needs review, never
    /// adopted); one whose amount, currency or reference differs is too. A pending record proves nothing.
    public static func queryResult(_ answer: JSONValue, expected: TransactionQueryResult.Expected) -> TransactionQueryResult {
        guard let status = answer["status"]?.int64Value, status == 0 || status == 2, let records = answer["trade_records"]?.arrayValue else {
            return .inconclusive(code: answer["status"]?.int64Value.map(String.init) ?? "paypipe.invalid_response",
                                 reason: "record query failed: \(answer["msg"]?.stringValue.map { String($0.prefix(200)) } ?? "no trade_records")")
        }
        let mine = records.filter { expected.orderReference == nil || $0["bank_transaction_id"]?.stringValue == expected.orderReference }
        guard let record = mine.first else {
            // A record for another reference in an answer filtered by this one means the filter was not applied.
            return records.isEmpty ? .notFound : .inconclusive(code: "paypipe.query_unrecognised", reason: "the records are not this payment's")
        }
        let amountMatches = expected.amountMinor == nil
            || record["amount"]?.int64Value.flatMap { minorUnits($0, currency: expected.currency ?? "") } == expected.amountMinor
        let currencyMatches = expected.currency == nil || record["currency"]?.stringValue == nil || record["currency"]?.stringValue == expected.currency
        guard mine.count == 1, amountMatches, currencyMatches else {
            var review = GatewayResult.local(.needsReview, code: "paypipe.query_ambiguous",
                                             message: "\(mine.count) trade record(s) under one payment's bank_transaction_id, or one that is not this payment's")
            review.reason = "gateway_query_ambiguous"
            return .found(review)
        }
        guard let recordStatus = record["record_status"]?.int64Value, let outcome = recordOutcome(recordStatus) else {
            return .inconclusive(code: "paypipe.query_uncertain", reason: "the trade record has no final status")
        }
        return .found(GatewayResult(
            outcome: outcome, errorCode: "record_status_\(recordStatus)", errorMessage: nil,
            transactionReference: record["rec_trade_id"]?.stringValue.map { String($0.prefix(64)) },
            authCode: record["auth_code"]?.stringValue.map { String($0.prefix(16)) }))
    }
}

/// The prime's age rule: a prime lives 90 s from when the app obtained it, measured from its job's publish
/// time (an earlier bound than PayPipe's first receipt). A Pay-by-Prime request, first or resent after a confirmed
/// "not found", is sent only while the prime's age is under 90 s minus the call's timeout, so TapPay cannot receive a
/// prime that expires during the call; otherwise the payment fails `prime_expired` without sending.
///
/// A deferred payment's prime (a job with `amountPending`) lives 30 days instead [doc: TapPay's Apple Pay guide, "the prime
/// could live for 30 days and payment amount is set by Pay by Prime"], under the same rule; the kind, not the job's
/// route, decides, so an ordinary prime keeps its 90 s.
public enum TapPayPrimeAge {
    public enum Kind: String, Sendable, Equatable {
        case ordinary, deferred

        public var lifetime: TimeInterval {
            switch self {
            case .ordinary: 90
            case .deferred: 30 * 86_400
            }
        }
    }

    /// An ordinary prime's lifetime.
    public static let lifetime: TimeInterval = Kind.ordinary.lifetime

    public static func maySend(publishedAt: Date, now: Date, callTimeout: TimeInterval, kind: Kind = .ordinary) -> Bool {
        now.timeIntervalSince(publishedAt) < kind.lifetime - callTimeout
    }

    /// Whether a prime of `kind` published at `publishedAt` has expired at `now` (no call could still reach TapPay in time).
    public static func hasExpired(publishedAt: Date, now: Date, kind: Kind) -> Bool {
        now.timeIntervalSince(publishedAt) >= kind.lifetime
    }
}
