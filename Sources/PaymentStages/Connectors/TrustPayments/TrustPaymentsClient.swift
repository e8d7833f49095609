import Foundation
import HTTP
import JWT
import Pipeline
import TrustPaymentsWire

/// Talks to Trust Payments over the merchant's transport (``GatewayEndpoint/transport``):
/// - `webservices`: the Webservices JSON API (`/json/`, HTTP Basic) as Trust Payments' Python SDK speaks it
///   (``WebservicesTransport``): the stored claims' `payload` is the request object, and an answer counts only if
///   it echoes the request's fresh `requestreference`;
/// - `jwt`: the `/jwt/` endpoint: sends a signed request JWT in the JSON envelope and verifies the signed answer
///   with the merchant's JWT secret (failing closed).
/// Both reduce everything — answers, HTTP statuses, transport failures — to a ``GatewayResult`` or
/// ``TransactionQueryResult``. It never throws: every way a call can end is an outcome the submit stage must record.
///
/// Calls run on the ``HTTPClient`` the caller passes: the submit stage's pool threads each keep one, so the
/// connection to the gateway stays alive between calls (a handle must stay on its thread).
public struct TrustPaymentsClient: Sendable {
    public let http: HTTPClientConfiguration
    /// Tolerated clock difference for the answer's `iat`.
    public let clockSkew: Int64
    /// Which gateway URLs may carry card data: checked before every call (``CardDataTransportPolicy``).
    public let transport: CardDataTransportPolicy

    /// Timeouts and connect retries of the `webservices` transport.
    public let webservices: WebservicesTransport

    public var totalTimeout: Double { http.totalTimeout }

    public init(http: HTTPClientConfiguration = HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 30), clockSkew: Int64 = 300,
                transport: CardDataTransportPolicy = .strict, webservices: WebservicesTransport = WebservicesTransport()) {
        self.http = http
        self.clockSkew = clockSkew
        self.transport = transport
        self.webservices = webservices
    }

    public func totalTimeout(for transport: GatewayEndpoint.Transport) -> Double {
        switch transport {
        case .jwt: http.totalTimeout
        case .webservices: webservices.totalTimeout
        }
    }

    /// Sends the stored request claims (re-signed with `iat = now`) as an AUTH (or THREEDQUERY+AUTH). With a
    /// ``SendWindow``, the request's bytes never leave after its deadline (the send gate refuses on the pool thread,
    /// certain-not-sent) and the JWT's `exp` is derived from it; without one, `exp` is ``requestLifetime(totalTimeout:)``
    /// after `now`.
    public func authorize(
        claims: JSONValue, requestTypes: [String], endpoint: GatewayEndpoint, requestId: String, now: Date,
        window: SendWindow?, using client: HTTPClient
    ) -> GatewayResult {
        if endpoint.transport == .webservices {
            return webservicesAuthorize(claims: claims, endpoint: endpoint, requestId: requestId, window: window, client: client)
        }
        let lifetime = window.map { Int64(($0.expiresAt.timeIntervalSince(now) + totalTimeout).rounded(.up)) + 1 }
            ?? Self.requestLifetime(totalTimeout: totalTimeout)
        let jwt = TrustPaymentsClaimsBuilder.signedJWT(claims: claims, secret: endpoint.secret, issuedAt: now, expiresIn: max(1, lifetime))
        switch exchange(jwt: jwt, requestTypes: requestTypes, endpoint: endpoint, requestId: requestId, gate: window?.gate, client: client) {
        case .success(let claims): return TrustPaymentsResponseMapper.result(fromClaims: claims)
        case .failure(let failure): return failure.result
        }
    }

    /// Seconds from `iat` to the AUTH's `exp` when no send window is given: the whole-second total timeout plus one,
    /// because `iat` is rounded down, so `exp` never falls before the client gave up.
    ///
    /// With a send window, `exp` is the send deadline plus the total timeout (plus one for rounding): a gateway that
    /// refuses expired request JWTs cannot act on the AUTH after that, which is before the attempt's reconciliation
    /// time (`send deadline + total timeout + margin`, margin at least 2 s). Defence in depth only: it is
    /// [UNCONFIRMED] that Trust Payments enforces `exp` on request JWTs (the simulator does), which is why the send
    /// gate, not `exp`, is what guarantees that no AUTH leaves late.
    public static func requestLifetime(totalTimeout: Double) -> Int64 {
        Int64(totalTimeout.rounded(.up)) + 1
    }

    /// Asks which transactions the gateway holds for `orderReference` on the endpoint's site; a record is adopted only
    /// if it matches `expected`.
    public func queryTransaction(
        orderReference: String, endpoint: GatewayEndpoint, expected: TransactionQueryResult.Expected, requestId: String, now: Date,
        using client: HTTPClient
    ) -> TransactionQueryResult {
        if endpoint.transport == .webservices {
            return webservicesQuery(orderReference: orderReference, endpoint: endpoint, expected: expected, requestId: requestId, client: client)
        }
        let claims = Self.queryClaims(orderReference: orderReference, endpoint: endpoint)
        let jwt = TrustPaymentsClaimsBuilder.signedJWT(claims: claims, secret: endpoint.secret, issuedAt: now)
        switch exchange(jwt: jwt, requestTypes: ["TRANSACTIONQUERY"], endpoint: endpoint, requestId: requestId, gate: nil, client: client) {
        case .success(let claims): return TrustPaymentsResponseMapper.queryResult(fromClaims: claims, expected: expected)
        case .failure(let failure): return .inconclusive(code: failure.result.errorCode ?? "paypipe.query_failed", reason: failure.result.errorMessage ?? "query failed")
        }
    }

    /// TRANSACTIONQUERY claims: the filter lists each criterion as an array of `{"value": …}` (see docs/submit.md).
    public static func queryClaims(orderReference: String, endpoint: GatewayEndpoint) -> JSONValue {
        ["iss": .string(endpoint.jwtUsername), "iat": 0, "payload": queryRequest(orderReference: orderReference, siteReference: endpoint.siteReference)]
    }

    /// A TRANSACTIONQUERY request object by site and order reference: the filter shape of the docs' "Transaction
    /// queries" page and the Python SDK's tests, each criterion an array of `{"value": …}` (docs/submit.md).
    public static func queryRequest(orderReference: String, siteReference: String) -> JSONValue {
        [
            "requesttypedescriptions": ["TRANSACTIONQUERY"],
            "filter": [
                "sitereference": [["value": .string(siteReference)]],
                "orderreference": [["value": .string(orderReference)]],
            ],
        ]
    }

    /// The JSON envelope Trust Payments' `/jwt/` endpoint takes.
    public static func envelope(jwt: String, alias: String, requestTypes: [String], requestId: String) -> JSONValue {
        [
            "alias": .string(alias),
            "jwt": .string(jwt),
            "version": "1.00",
            "acceptcustomeroutput": "2.00",
            "request": [["requesttypedescriptions": .array(requestTypes.map(JSONValue.string)), "requestid": .string(requestId)]],
        ]
    }

    /// A call that produced no verified answer, already reduced to its result.
    struct Failure: Error {
        let result: GatewayResult
    }

    /// POSTs the envelope and returns the verified claims of the answer.
    func exchange(
        jwt: String, requestTypes: [String], endpoint: GatewayEndpoint, requestId: String, gate: HTTPSendGate?, client: HTTPClient
    ) -> Result<JSONValue, Failure> {
        if let refusal = transport.refusal(endpoint.jwtURL) {
            // Certain-not-sent and unfixable by retrying: the merchant's gateway URL must change.
            return .failure(Failure(result: .local(.permanentError, code: "paypipe.insecure_gateway_url", message: refusal)))
        }
        let body = Self.envelope(jwt: jwt, alias: endpoint.jwtUsername, requestTypes: requestTypes, requestId: requestId).serialized()
        let request = HTTPRequest(method: "POST", url: endpoint.jwtURL, headers: [
            HTTPHeader(name: "Content-Type", value: "application/json;charset=utf-8"),
            HTTPHeader(name: "Accept", value: "application/json"),
        ], body: body, sendGate: gate)
        let response: HTTPResponse
        do {
            response = try client.send(request)
        } catch {
            return .failure(Failure(result: .notAnswered(error)))
        }
        if let failure = Self.statusFailure(response.status) { return .failure(Failure(result: failure)) }
        guard let document = try? JSONValue.parse(response.body), let token = document["jwt"]?.stringValue else {
            return .failure(Failure(result: .local(.uncertain, code: "paypipe.invalid_response", message: "answer is not a {\"jwt\": …} object")))
        }
        do {
            // An answer older than the call itself can be (its whole timeout plus the tolerated skew) is a replay.
            let verified = try JWTVerifier(
                key: Array(endpoint.secret.utf8), algorithms: [.hs256], maxAge: Self.maximumAnswerAge(totalTimeout: totalTimeout, clockSkew: clockSkew),
                clockSkew: clockSkew
            ).verify(token)
            return .success(verified.claims)
        } catch {
            // Fail closed: an answer we cannot authenticate says nothing, so the outcome stays unknown.
            return .failure(Failure(result: .local(.uncertain, code: "paypipe.signature_invalid", message: "answer JWT rejected: \(error)")))
        }
    }

    /// The oldest `iat` accepted on an answer: the call's total timeout plus the clock skew.
    public static func maximumAnswerAge(totalTimeout: Double, clockSkew: Int64) -> Int64 {
        Int64(totalTimeout.rounded(.up)) + clockSkew
    }

    /// Non-200 statuses: 401/403 a credentials problem; any other status, 503 included (a proxy in front of the
    /// gateway may answer it after forwarding the request), leaves the outcome unknown.
    static func statusFailure(_ status: Int) -> GatewayResult? {
        switch status {
        case 200: nil
        case 503: .local(.uncertain, code: "paypipe.http_503", message: "gateway unavailable (HTTP 503)")
        case 401, 403: .local(.permanentError, code: "paypipe.http_\(status)", message: "gateway refused the credentials (HTTP \(status))")
        default: .local(.uncertain, code: "paypipe.http_\(status)", message: "gateway answered HTTP \(status)")
        }
    }
}

/// Trust Payments' two URLs under a merchant's `gateway.baseUrl`.
extension GatewayEndpoint {
    /// The `/jwt/` URL, tolerating a base URL written with or without a trailing slash.
    public var jwtURL: String { trimmedBase + "/jwt/" }

    /// The Webservices JSON API's `/json/` URL (the Python SDK's `datacenterurl` + `datacenterpath`).
    public var jsonURL: String { trimmedBase + "/json/" }
}
