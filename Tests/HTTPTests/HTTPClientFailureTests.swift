import Foundation
import HTTP
import Synchronization
import Testing

@Suite struct HTTPClientFailureTests {
    @Test func timeoutAfterSendingIsReportedAsUncertain() throws {
        try withServer(handler: { _ in
            Thread.sleep(forTimeInterval: 1.5)
            return .text("late")
        }) { base in
            let client = HTTPClient(configuration: HTTPClientConfiguration(totalTimeout: 0.3))
            let started = Date()
            let error = #expect(throws: HTTPClientError.self) {
                try client.send(HTTPRequest(method: "POST", url: base + "/slow", body: Array("{}".utf8)))
            }
            #expect(Date().timeIntervalSince(started) < 1.2)
            guard case .timedOut(afterSending: true)? = error else {
                Issue.record("expected timedOut(afterSending: true), got \(String(describing: error))")
                return
            }
            #expect(error?.requestMayHaveBeenSent == true)
        }
    }

    @Test func closedPortIsCouldNotConnectAndSafeToRetry() throws {
        // Start and stop a server to get a port nobody listens on.
        let server = HTTPServer(host: "127.0.0.1", port: 0) { _ in .text("") }
        try server.start()
        let port = server.boundPort
        server.stop()
        #expect(server.boundPort == 0)

        let error = #expect(throws: HTTPClientError.self) {
            try HTTPClient().send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/", body: [1, 2, 3]))
        }
        guard case .couldNotConnect? = error else {
            Issue.record("expected couldNotConnect, got \(String(describing: error))")
            return
        }
        #expect(error?.requestMayHaveBeenSent == false)
    }

    @Test func redirectIsReturnedAsIsUnlessConfigured() throws {
        try withServer(handler: { request in
            request.path == "/old"
                ? HTTPServerResponse(status: 302, headers: [HTTPHeader("Location", "/new")])
                : .text("new place")
        }) { base in
            let plain = try HTTPClient().send(HTTPRequest(url: base + "/old"))
            #expect(plain.status == 302)
            #expect(plain.header("location") == "/new")

            let following = HTTPClient(configuration: HTTPClientConfiguration(followRedirects: true))
            let followed = try following.send(HTTPRequest(url: base + "/old"))
            #expect(followed.status == 200)
            #expect(followed.body == Array("new place".utf8))
            #expect(followed.header("Location") == nil)
        }
    }

    @Test func responseOverLimitIsTooLarge() throws {
        try withServer(handler: { _ in HTTPServerResponse(body: [UInt8](repeating: 0, count: 10_000)) }) { base in
            let client = HTTPClient(configuration: HTTPClientConfiguration(maxResponseBytes: 9_999))
            let error = #expect(throws: HTTPClientError.self) {
                try client.send(HTTPRequest(url: base + "/"))
            }
            guard case .tooLarge? = error else {
                Issue.record("expected tooLarge, got \(String(describing: error))")
                return
            }
            #expect(error?.requestMayHaveBeenSent == true)
            // The handle stays usable.
            let relaxed = HTTPClient(configuration: HTTPClientConfiguration(maxResponseBytes: 10_000))
            let accepted = try relaxed.send(HTTPRequest(url: base + "/"))
            #expect(accepted.body.count == 10_000)
        }
    }

    @Test(arguments: [
        HTTPRequest(method: "GET", url: "http://127.0.0.1:1/", headers: [HTTPHeader("X-A", "b\r\nX-Injected: 1")]),
        HTTPRequest(method: "GET", url: "http://127.0.0.1:1/", headers: [HTTPHeader("Bad Name", "v")]),
        HTTPRequest(method: "GE T", url: "http://127.0.0.1:1/"),
        HTTPRequest(method: "GET", url: "file:///etc/passwd"),
    ])
    func invalidRequestsAreRejectedBeforeSending(request: HTTPRequest) {
        let error = #expect(throws: HTTPClientError.self) { try HTTPClient().send(request) }
        guard case .invalidRequest? = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(error?.requestMayHaveBeenSent == false)
    }

    @Test func keepAliveReusesOneConnection() throws {
        let peers = Recorder<String>()
        try withServer(handler: { request in
            peers.append(request.remoteAddress ?? "?")
            return .text("ok")
        }) { base in
            let client = HTTPClient()
            for index in 0..<200 {
                let response = try client.send(HTTPRequest(
                    method: index.isMultiple(of: 2) ? "GET" : "POST", url: base + "/ka", body: index.isMultiple(of: 2) ? [] : [1]))
                #expect(response.status == 200)
            }
        }
        #expect(peers.all.count == 200)
        #expect(Set(peers.all).count == 1, "every request should arrive on the same client socket")
        #expect(peers.all.first?.hasPrefix("127.0.0.1:") == true)
    }

    /// libcurl resends a request when a reused connection dies before any response byte. For a POST that already
    /// reached the server this would duplicate a payment; the client must refuse and report an uncertain outcome.
    @Test func deadKeepAliveConnectionAfterPostIsNotResent() throws {
        let server = try RawTCPServer { index in index == 0 ? .respond : .closeWithoutResponse }
        defer { server.stop() }
        let client = HTTPClient(configuration: HTTPClientConfiguration(totalTimeout: 3))
        let url = "http://127.0.0.1:\(server.port)/pay"
        #expect(try client.send(HTTPRequest(method: "POST", url: url, body: [1])).status == 200)

        let error = #expect(throws: HTTPClientError.self) {
            try client.send(HTTPRequest(method: "POST", url: url, body: [2]))
        }
        guard case .connectionReset(afterSending: true)? = error else {
            Issue.record("expected connectionReset(afterSending: true), got \(String(describing: error))")
            return
        }
        Thread.sleep(forTimeInterval: 0.2)
        #expect(server.requestLines == ["POST /pay HTTP/1.1", "POST /pay HTTP/1.1"], "the POST must not be sent a third time")
    }

    /// The same resend, but a send gate that allowed the first write refuses libcurl's second (the send window ran
    /// out meanwhile): the refusal must not turn into "certainly not sent", because the first write reached the
    /// server. Submit would otherwise record the AUTH `not_sent` and send it again (adversarial chaos found it).
    @Test func aGateRefusingLibcurlsResendStillReportsTheRequestAsMaybeSent() throws {
        let server = try RawTCPServer { index in index == 0 ? .respond : .closeWithoutResponse }
        defer { server.stop() }
        let client = HTTPClient(configuration: HTTPClientConfiguration(totalTimeout: 3))
        let url = "http://127.0.0.1:\(server.port)/pay"
        #expect(try client.send(HTTPRequest(method: "POST", url: url, body: [1])).status == 200)

        let offered = Mutex(0)
        let gate = HTTPSendGate { _ in
            offered.withLock { count in
                count += 1
                return count == 1 ? nil : "send window over"
            }
        }
        let error = #expect(throws: HTTPClientError.self) {
            try client.send(HTTPRequest(method: "POST", url: url, body: [2], sendGate: gate))
        }
        guard case .connectionReset(afterSending: true)? = error else {
            Issue.record("expected connectionReset(afterSending: true), got \(String(describing: error))")
            return
        }
        #expect(error?.requestMayHaveBeenSent == true)
        Thread.sleep(forTimeInterval: 0.2)
        #expect(server.requestLines == ["POST /pay HTTP/1.1", "POST /pay HTTP/1.1"], "the POST must not be sent a third time")
    }

    @Test func deadKeepAliveConnectionAfterGetIsRetriedTransparently() throws {
        let server = try RawTCPServer { index in index == 1 ? .closeWithoutResponse : .respond }
        defer { server.stop() }
        let client = HTTPClient(configuration: HTTPClientConfiguration(totalTimeout: 3))
        let url = "http://127.0.0.1:\(server.port)/status"
        #expect(try client.send(HTTPRequest(url: url)).status == 200)
        #expect(try client.send(HTTPRequest(url: url)).status == 200)
        #expect(server.requestLines.count == 3)
    }
}
