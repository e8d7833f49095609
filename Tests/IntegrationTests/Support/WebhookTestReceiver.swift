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
        /// Holds every request until enough are in flight across receivers (``InFlightProbe``).
        let probe = Mutex<InFlightProbe?>(nil)
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
            state.probe.withLock { $0 }?.hold()
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

    /// Hold every request in `probe` until its parties are in flight together.
    func hold(with probe: InFlightProbe) {
        state.probe.withLock { $0 = probe }
    }

    /// Send `headers` with every response.
    func respond(with headers: [HTTPHeader]) {
        state.headers.withLock { $0 = headers }
    }

    var requests: [Request] { state.requests.withLock { $0 } }

    func stop() { server.stop() }
}

/// Requests in flight together, across several receivers: each request is held until `parties` requests have been in
/// flight at once (then all are answered), or for at most `limit` seconds, so that a sender that serialises them still
/// gets its answers (with `peak` 1). Keep `limit` below the sender's request timeout (``NotifyHarness/makeStage``'s
/// `totalTimeout`), so that no request the sender gave up on is still counted when the next one arrives.
final class InFlightProbe: Sendable {
    let parties: Int
    let limit: Double
    private let state = Mutex<(current: Int, peak: Int)>((0, 0))

    init(parties: Int, limit: Double = 3) {
        (self.parties, self.limit) = (parties, limit)
    }

    /// The most requests seen in flight at once.
    var peak: Int { state.withLock { $0.peak } }

    func hold() {
        state.withLock { state in
            state.current += 1
            state.peak = max(state.peak, state.current)
        }
        defer { state.withLock { $0.current -= 1 } }
        let deadline = Date().addingTimeInterval(limit)
        while peak < parties, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.005)
        }
    }
}
