import Foundation
import HTTP
import JWT
import Pipeline
import TrustPaymentsWire

/// The `webservices` transport's timing, as Trust Payments' Python SDK 1.0.26 does it (`config.py:38-42`,
/// `httpclient.py` `_send`): a connection failure is retried, 0.5 s apart and at most 6 times, while 10 s of
/// connecting have not passed, and never once a request byte may have left; the answer must come within the total
/// timeout (the SDK's receive timeout, 60 s), or the outcome is uncertain.
public struct WebservicesTransport: Sendable, Equatable {
    /// Seconds of connecting (all retries together) before giving up, the request certainly not sent
    /// (`PAYPIPE_WEBSERVICES_CONNECT_TIMEOUT`).
    public var connectTimeout: Double
    /// Seconds from the first connection attempt until the answer must be complete (`PAYPIPE_WEBSERVICES_TIMEOUT`).
    public var totalTimeout: Double
    public var maxConnectRetries: Int
    public var retrySleep: Double

    public init(connectTimeout: Double = 10, totalTimeout: Double = 60, maxConnectRetries: Int = 6, retrySleep: Double = 0.5) {
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maxConnectRetries = maxConnectRetries
        self.retrySleep = retrySleep
    }

    /// Whether a failed try may be made again: only when nothing can have been sent (the connection itself failed),
    /// within the retry count and the connect budget. A TLS failure is not retried: it is configuration.
    public func mayRetry(_ error: HTTPClientError, tries: Int, elapsed: Double) -> Bool {
        guard tries <= maxConnectRetries, elapsed + retrySleep < connectTimeout else { return false }
        switch error {
        case .couldNotConnect: return true
        case .timedOut(let afterSending), .connectionReset(let afterSending): return !afterSending
        case .invalidRequest, .tls, .tooLarge, .refusedBeforeSending, .other: return false
        }
    }
}

extension TrustPaymentsClient {
    /// The envelope's `libraryversion` and the `VERSIONINFO` header: who is calling (the SDK sends
    /// `python_1.0.26` and `Python::<python>::1.0.26::<platform>`).
    public static let libraryVersion = "paypipe_1.0"
    public static let versionInfo = "Swift::6::paypipe_1.0::Linux"

    /// A fresh request reference: `requestId` (what the attempt is: `A<attempt>`, `Q<attempt>`) plus 8 random
    /// characters of the SDK's alphabet, so an answer to an earlier request about the same attempt never matches.
    public static func requestReference(_ requestId: String) -> String {
        let alphabet = Array("0123456789abcdefghjkmnpqrtuvwxy")
        return requestId + "-" + String((0..<8).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
    }

    /// The Webservices JSON envelope (`converter.py` `_encode`): `alias` is the Webservices user, one request
    /// object carrying the request reference and version info (`requestobject.py`).
    public static func webservicesEnvelope(request: JSONValue, alias: String, requestReference: String) -> JSONValue {
        var object = request
        object.set(.string(requestReference), forKey: "requestreference")
        object.set(.string(versionInfo), forKey: "versioninfo")
        return [
            "alias": .string(alias),
            "version": "1.00",
            "request": [object],
            "libraryversion": .string(libraryVersion),
            "acceptcustomeroutput": "2.00",
        ]
    }

    /// An AUTH over `/json/`: the stored claims' `payload` (the per-payment `orderreference` already in it) is the
    /// request object. No `exp` exists on this transport: the send gate alone keeps the bytes from leaving after the
    /// send deadline, and the attempt is reconciled after that deadline plus the total timeout plus the margin.
    func webservicesAuthorize(claims: JSONValue, endpoint: GatewayEndpoint, requestId: String, window: SendWindow?, client: HTTPClient) -> GatewayResult {
        guard let payload = claims["payload"], payload.objectValue != nil else {
            return .local(.permanentError, code: "paypipe.invalid_request", message: "stored claims have no payload object")
        }
        switch webservicesExchange(request: payload, endpoint: endpoint, requestId: requestId, gate: window?.gate, client: client) {
        case .success(let answer): return TrustPaymentsResponseMapper.result(fromClaims: ["payload": answer])
        case .failure(let failure): return failure.result
        }
    }

    /// A TRANSACTIONQUERY over `/json/` by site and the attempt's order reference.
    func webservicesQuery(
        orderReference: String, endpoint: GatewayEndpoint, expected: TransactionQueryResult.Expected, requestId: String, client: HTTPClient
    ) -> TransactionQueryResult {
        let request = Self.queryRequest(orderReference: orderReference, siteReference: endpoint.siteReference)
        switch webservicesExchange(request: request, endpoint: endpoint, requestId: requestId, gate: nil, client: client) {
        case .success(let answer): return TrustPaymentsResponseMapper.queryResult(fromClaims: ["payload": answer], expected: expected)
        case .failure(let failure):
            return .inconclusive(code: failure.result.errorCode ?? "paypipe.query_failed", reason: failure.result.errorMessage ?? "query failed")
        }
    }

    /// POSTs one request object and returns the answer document (`{requestreference, version, response[], secrand}`),
    /// only if it echoes the reference sent (the SDK's `api.py` `_verify_result`: anything else is not an answer to
    /// this request, so its outcome is unknown).
    func webservicesExchange(
        request: JSONValue, endpoint: GatewayEndpoint, requestId: String, gate: HTTPSendGate?, client: HTTPClient
    ) -> Result<JSONValue, Failure> {
        if let refusal = transport.refusal(endpoint.jsonURL) {
            return .failure(Failure(result: .local(.permanentError, code: "paypipe.insecure_gateway_url", message: refusal)))
        }
        let reference = Self.requestReference(requestId)
        let body = Self.webservicesEnvelope(request: request, alias: endpoint.username, requestReference: reference).serialized()
        let credentials = Data("\(endpoint.username):\(endpoint.secret)".utf8).base64EncodedString()
        let headers = [
            HTTPHeader(name: "Content-Type", value: "application/json;charset=utf-8"),
            HTTPHeader(name: "Accept", value: "application/json"),
            HTTPHeader(name: "Authorization", value: "Basic \(credentials)"),
            HTTPHeader(name: "REQUESTREFERENCE", value: reference),
            HTTPHeader(name: "VERSIONINFO", value: Self.versionInfo),
        ]
        let settings = webservices
        let start = ContinuousClock.now
        var tries = 0
        let response: HTTPResponse
        while true {
            tries += 1
            let elapsed = Self.seconds(ContinuousClock.now - start)
            let attempt = HTTPRequest(
                method: "POST", url: endpoint.jsonURL, headers: headers, body: body, sendGate: gate,
                connectTimeout: max(0.1, settings.connectTimeout - elapsed),
                totalTimeout: max(0.1, settings.totalTimeout - elapsed))
            do {
                response = try client.send(attempt)
                break
            } catch {
                // `mayRetry` never retries a send-window refusal.
                if settings.mayRetry(error, tries: tries, elapsed: Self.seconds(ContinuousClock.now - start)) {
                    Thread.sleep(forTimeInterval: settings.retrySleep)
                    continue
                }
                return .failure(Failure(result: .notAnswered(error)))
            }
        }
        if Self.seconds(ContinuousClock.now - start) > settings.totalTimeout {
            // Past the deadline reconciliation counts on: the attempt may already be queried, so this is not believed.
            return .failure(Failure(result: .local(.uncertain, code: "paypipe.late_answer", message: "answer arrived after the total timeout")))
        }
        if let failure = Self.statusFailure(response.status) { return .failure(Failure(result: failure)) }
        guard let document = try? JSONValue.parse(response.body), document.objectValue != nil else {
            return .failure(Failure(result: .local(.uncertain, code: "paypipe.invalid_response", message: "answer is not a JSON object")))
        }
        guard document["requestreference"]?.stringValue == reference else {
            return .failure(Failure(result: .local(
                .uncertain, code: "paypipe.request_reference_mismatch",
                message: "answer's requestreference \(document["requestreference"]?.stringValue.map { "'\($0.prefix(40))'" } ?? "absent") is not the one sent")))
        }
        return .success(document)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
