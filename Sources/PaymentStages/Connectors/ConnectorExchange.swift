import Foundation
import HTTP
import JWT
import Pipeline

/// The thin HTTP part the JSON-answering connectors share: the endpoint gate before anything is sent, the send window,
/// the per-request timeouts, and the reduction of every transport failure to an outcome (the same rules as every
/// connector's: refused before sending is `transient`, anything that may have left is `uncertain`).
struct ConnectorExchange: Sendable {
    let transport: CardDataTransportPolicy
    let connectTimeout: Double
    let totalTimeout: Double
    /// Answers larger than this are not read as answers (a hostile peer cannot make a worker parse megabytes).
    static let maximumAnswerBytes = 1 << 20

    /// A call that produced no usable answer, already reduced to its result.
    struct Failure: Error {
        let result: GatewayResult
    }

    /// Sends `request` (its URL checked first) and returns the answer's JSON object: HTTP 200-299 and 400-499 both carry
    /// one at these processors (a validation error may come with 400 and a result code), so the body decides; 401/403
    /// without a result object are a credentials problem; any other status or a body that is not a JSON object leaves
    /// the outcome unknown.
    func send(_ request: HTTPRequest, client: HTTPClient) -> Result<JSONValue, Failure> {
        answer(request, client: client).map(\.body)
    }

    /// An answer's JSON object with the HTTP status it came with (a connector's query may read "not found" from both).
    struct Answer {
        let status: Int
        let body: JSONValue
    }

    /// ``send(_:client:)`` keeping the HTTP status of the answer.
    func answer(_ request: HTTPRequest, client: HTTPClient) -> Result<Answer, Failure> {
        if let refusal = transport.refusal(request.url) {
            return .failure(Failure(result: .local(.permanentError, code: "paypipe.insecure_gateway_url", message: refusal)))
        }
        var request = request
        request.connectTimeout = connectTimeout
        request.totalTimeout = totalTimeout
        let response: HTTPResponse
        do {
            response = try client.send(request)
        } catch {
            return .failure(Failure(result: .notAnswered(error)))
        }
        let document = response.body.count <= Self.maximumAnswerBytes ? try? JSONValue.parse(response.body) : nil
        switch (response.status, document?.objectValue) {
        case (200...299, .some), (400...499, .some):
            return .success(Answer(status: response.status, body: document!))
        case (401, nil), (403, nil):
            return .failure(Failure(result: .local(.permanentError, code: "paypipe.http_\(response.status)",
                                                   message: "gateway refused the credentials (HTTP \(response.status))")))
        case (200...299, nil):
            return .failure(Failure(result: .local(.uncertain, code: "paypipe.invalid_response", message: "answer is not a JSON object")))
        default:
            return .failure(Failure(result: .local(.uncertain, code: "paypipe.http_\(response.status)", message: "gateway answered HTTP \(response.status)")))
        }
    }

    /// A query's failure as an inconclusive result.
    static func inconclusive(_ failure: Failure) -> TransactionQueryResult {
        .inconclusive(code: failure.result.errorCode ?? "paypipe.query_failed", reason: failure.result.errorMessage ?? "query failed")
    }
}

extension GatewayResult {
    /// A call that ended without an answer, by what may have been sent: refused by the send window before any byte
    /// (`paypipe.send_window`, transient: not an endpoint failure, the circuit breaker ignores it); a transport failure
    /// after a byte may have left (`paypipe.transport`, uncertain) or before (transient). Every connector's rule.
    static func notAnswered(_ error: HTTPClientError) -> GatewayResult {
        if case .refusedBeforeSending(let reason) = error {
            return .local(.transient, code: "paypipe.send_window", message: "not sent: \(reason)")
        }
        return .local(error.requestMayHaveBeenSent ? .uncertain : .transient, code: "paypipe.transport", message: error.description)
    }
}
