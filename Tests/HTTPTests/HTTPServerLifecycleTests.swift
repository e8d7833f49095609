import HTTP
import Testing

@Suite struct HTTPServerLifecycleTests {
    @Test func ephemeralPortIsReportedAndClearedOnStop() throws {
        let server = HTTPServer(host: "127.0.0.1", port: 0) { _ in .text("ok") }
        #expect(server.boundPort == 0)
        try server.start()
        #expect(server.boundPort != 0)
        #expect(throws: HTTPServerError.self) { try server.start() }
        server.stop()
        #expect(server.boundPort == 0)
        server.stop()  // idempotent
        // Restartable after a stop.
        try server.start()
        let response = try HTTPClient().send(HTTPRequest(url: "http://127.0.0.1:\(server.boundPort)/"))
        #expect(response.status == 200)
        server.stop()
    }

    @Test(arguments: ["localhost", "999.1.1.1", "::1", ""])
    func hostMustBeAnIPv4Literal(host: String) {
        let server = HTTPServer(host: host, port: 0) { _ in .text("") }
        #expect(throws: HTTPServerError.self) { try server.start() }
        #expect(server.boundPort == 0)
    }

    @Test func portInUseFailsToStart() throws {
        let first = HTTPServer(host: "127.0.0.1", port: 0) { _ in .text("") }
        try first.start()
        defer { first.stop() }
        let second = HTTPServer(host: "127.0.0.1", port: first.boundPort) { _ in .text("") }
        let error = #expect(throws: HTTPServerError.self) { try second.start() }
        guard case .couldNotStart? = error else {
            Issue.record("expected couldNotStart, got \(String(describing: error))")
            return
        }
    }
}
