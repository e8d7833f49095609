import Foundation
import HTTP
import PaymentStages
import PayPipeDevTools
import Synchronization

/// The merchant's endpoint in notify tests: an in-process ``HTTPServer`` on an ephemeral loopback port that verifies
/// **every** request's Standard Webhooks signature and answers with a scripted status sequence.
final class WebhookTestReceiver: Sendable {
    struct Request: Sendable {
        let headers: [HTTPHeader]
        let body: [UInt8]
        let verified: Bool
        func header(_ name: String) -> String? { headers.value(for: name) }
    }

    private let server: HTTPServer
    private let state: State

    private final class State: Sendable {
        let requests = Mutex<[Request]>([])
        /// Statuses for the next requests, in order; once used up, `fallback`.
        let script = Mutex<(next: [Int], fallback: Int)>(([], 204))
        /// Seconds each response is held back (a slow endpoint).
        let delay = Mutex<Double>(0)
        /// Headers of every response (a hostile endpoint's `Retry-After`, say).
        let headers = Mutex<[HTTPHeader]>([])
    }

    init(secret: String) throws {
        let verifier = try WebhookVerifier(secrets: [secret])
        let state = State()
        self.state = state
        server = HTTPServer(host: "127.0.0.1", port: 0, threads: 2) { request in
            let verified = (try? verifier.verify(body: request.body) { request.header($0) }) != nil
            state.requests.withLock { $0.append(Request(headers: request.headers, body: request.body, verified: verified)) }
            let delay = state.delay.withLock { $0 }
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            let status = state.script.withLock { script in script.next.isEmpty ? script.fallback : script.next.removeFirst() }
            return HTTPServerResponse(status: verified ? status : 401, headers: state.headers.withLock { $0 })
        }
        try server.start()
    }

    var url: String { url(host: "127.0.0.1") }

    /// The receiver's URL under another name for the same address (`localhost`).
    func url(host: String) -> String { "http://\(host):\(server.boundPort)/webhooks" }

    /// Answer `statuses` to the next requests, then `fallback`.
    func script(_ statuses: [Int], then fallback: Int = 204) {
        state.script.withLock { $0 = (statuses, fallback) }
    }

    /// Hold every response back by `seconds`.
    func respond(after seconds: Double) {
        state.delay.withLock { $0 = seconds }
    }

    /// Send `headers` with every response.
    func respond(with headers: [HTTPHeader]) {
        state.headers.withLock { $0 = headers }
    }

    var requests: [Request] { state.requests.withLock { $0 } }

    func stop() { server.stop() }
}
