// http-bench: sequential keep-alive POSTs of 1 KB from one HTTPClient to a local HTTPServer.
// Usage: http-bench [seconds=3] [bodyBytes=1024]
import Foundation
import HTTP

/// The server side of the benchmark. A static member, not a top-level closure: libmicrohttpd calls it on its own
/// threads, and top-level code in main.swift is main-actor isolated (interop pitfall 2).
enum BenchHandler {
    static let reply = Array(#"{"ok":true}"#.utf8)

    static func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        .json(reply)
    }
}

/// Runs `operation` repeatedly for `seconds` and returns (count, elapsed, per-call latencies in microseconds).
func measure(seconds: Double, _ operation: () throws -> Void) rethrows -> (count: Int, elapsed: Double, latencies: [Double]) {
    var latencies: [Double] = []
    let start = DispatchTime.now().uptimeNanoseconds
    let deadline = start + UInt64(seconds * 1e9)
    var now = start
    while now < deadline {
        try operation()
        let after = DispatchTime.now().uptimeNanoseconds
        latencies.append(Double(after - now) / 1000)
        now = after
    }
    return (latencies.count, Double(now - start) / 1e9, latencies)
}

let arguments = CommandLine.arguments
let seconds = arguments.count > 1 ? Double(arguments[1]) ?? 3 : 3
let bodyBytes = arguments.count > 2 ? Int(arguments[2]) ?? 1024 : 1024

let server = HTTPServer(host: "127.0.0.1", port: 0, threads: 2, handler: BenchHandler.handle)
try server.start()
let client = HTTPClient()
let request = HTTPRequest(
    method: "POST", url: "http://127.0.0.1:\(server.boundPort)/bench",
    headers: [HTTPHeader("Content-Type", "application/json")],
    body: [UInt8](repeating: UInt8(ascii: "x"), count: bodyBytes))

_ = try measure(seconds: 0.5) { _ = try client.send(request) }  // warm-up: connection, caches
let result = try measure(seconds: seconds) {
    let response = try client.send(request)
    precondition(response.status == 200 && response.body == BenchHandler.reply)
}
server.stop()

let sorted = result.latencies.sorted()
func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
print(String(
    format: "http-bench: %d sequential keep-alive POSTs of %d bytes in %.2f s = %.0f req/s (p50 %.0f µs, p99 %.0f µs)",
    result.count, bodyBytes, result.elapsed, Double(result.count) / result.elapsed, percentile(0.5), percentile(0.99)))
