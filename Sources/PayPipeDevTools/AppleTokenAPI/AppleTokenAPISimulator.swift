import Foundation
import HTTP
import JSON
import Synchronization

/// A stand-in for Apple's Merchant Token Management API (`https://apple-pay-gateway.apple.com/paymentservices/v1/…`,
/// developer.apple.com/documentation/merchanttokennotificationservices), behind mutual TLS (``MutualTLSServer``):
///
/// - `GET /paymentservices/v1/merchantId/{merchantId}/merchantToken/event/{eventId}`: 200 with the event scripted by
///   ``addEvent(merchantId:eventId:body:)``, 400 `ErrorResponse` for an unknown one;
/// - `POST /paymentservices/v1/merchantId/{merchantId}/merchantToken/unlink` `{"merchantTokenIdentifier"}`: 204 for a
///   token ``addToken(merchantId:identifier:)`` named (unlinked from then on), 400 otherwise or over 64 characters.
///
/// Every call must carry `x-request-id` and `Content-Type` (both required by Apple [doc]) or gets 400; a caller without
/// a client certificate from the configured CA never gets past the TLS handshake, and one whose certificate's subject
/// UID is not the path's merchant id gets 403 (Apple scopes by the merchant's identity certificate).
public final class AppleTokenAPISimulator: Sendable {
    public struct Call: Sendable, Equatable {
        public var method: String
        public var path: String
        public var requestId: String
    }

    private struct State {
        var events: [String: [UInt8]] = [:]        // "merchantId/eventId" → body
        var tokens: Set<String> = []               // "merchantId/identifier"
        var unlinked: Set<String> = []
        var calls: [Call] = []
    }

    /// The scripted events and tokens and the calls seen, shared with the server's handler.
    private final class Store: Sendable {
        let state = Mutex(State())
    }

    private let store: Store
    private let server: MutualTLSServer

    public init(files: MutualTLSServer.Files) {
        let store = Store()
        self.store = store
        server = MutualTLSServer(files: files) { request in Self.answer(request, store: store) }
    }

    /// Listens on 127.0.0.1:`port` (0: a free one).
    public func start(port: UInt16 = 0) throws(MutualTLSServer.ServerError) { try server.start(port: port) }
    public func stop() { server.stop() }
    public var baseURL: String { "https://127.0.0.1:\(server.boundPort)" }
    public var refusedHandshakes: Int { server.refusedHandshakes }
    public var lastRefusalReason: String? { server.lastRefusalReason }
    public var calls: [Call] { store.state.withLock { $0.calls } }

    public func addEvent(merchantId: String, eventId: String, body: [UInt8]) {
        store.state.withLock { $0.events["\(merchantId)/\(eventId)"] = body }
    }

    public func addToken(merchantId: String, identifier: String) {
        store.state.withLock { _ = $0.tokens.insert("\(merchantId)/\(identifier)") }
    }

    public func isUnlinked(merchantId: String, identifier: String) -> Bool {
        store.state.withLock { $0.unlinked.contains("\(merchantId)/\(identifier)") }
    }

    static func error(_ status: Int, _ message: String) -> HTTPServerResponse {
        let body: JSONValue = ["statusCode": .integer(Int64(status)), "subStatusCode": 0, "errorMessage": .string(message)]
        return .json(body.serialized(), status: status)
    }

    private static func answer(_ request: HTTPServerRequest, store: Store) -> HTTPServerResponse {
        guard let requestId = request.header("x-request-id"), !requestId.isEmpty else { return error(400, "x-request-id is required") }
        guard request.header("Content-Type") != nil else { return error(400, "Content-Type is required") }
        store.state.withLock { $0.calls.append(Call(method: request.method, path: request.path, requestId: requestId)) }
        let parts = request.path.split(separator: "/").map(String.init)
        // paymentservices v1 merchantId {m} merchantToken (event {e} | unlink)
        guard parts.count >= 6, parts[0] == "paymentservices", parts[1] == "v1", parts[2] == "merchantId", parts[4] == "merchantToken" else {
            return error(404, "no such resource")
        }
        let merchant = parts[3]
        // Apple serves a merchant's events and unlinks only to that merchant's identity certificate (mutual TLS); the
        // status Apple answers a certificate of another merchant is [UNCONFIRMED]: 403 here.
        guard request.header(MutualTLSServer.clientUIDHeader) == merchant else {
            return error(403, "the client certificate is not merchant \(merchant)'s identity")
        }
        switch (request.method, Array(parts.dropFirst(5))) {
        case ("GET", let rest) where rest.count == 2 && rest[0] == "event":
            guard let body = store.state.withLock({ $0.events["\(merchant)/\(rest[1])"] }) else { return error(400, "unknown event") }
            return .json(body)
        case ("POST", ["unlink"]):
            guard let identifier = (try? JSONValue.parse(request.body))?["merchantTokenIdentifier"]?.stringValue,
                  identifier.count <= 64 else { return error(400, "merchantTokenIdentifier is required (at most 64)") }
            let key = "\(merchant)/\(identifier)"
            let known = store.state.withLock { state -> Bool in
                guard state.tokens.contains(key) else { return false }
                state.unlinked.insert(key)
                return true
            }
            return known ? HTTPServerResponse(status: 204) : error(400, "The merchant token identifier isn't valid for the merchant identifier")
        default:
            return error(404, "no such resource")
        }
    }
}
