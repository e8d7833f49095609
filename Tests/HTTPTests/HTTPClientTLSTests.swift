import HTTP
import Testing

@Suite(.serialized) struct HTTPClientTLSTests {
    @Test func privateCAIsTrustedOnlyWhenConfigured() throws {
        let server = try TLSTestServer()
        defer { server.stop() }
        let url = "https://127.0.0.1:\(server.port)/"

        // Default: system trust store, which does not know our CA → TLS error, nothing sent.
        let error = #expect(throws: HTTPClientError.self) { try HTTPClient().send(HTTPRequest(url: url)) }
        guard case .tls? = error else {
            Issue.record("expected tls, got \(String(describing: error))")
            return
        }
        #expect(error?.requestMayHaveBeenSent == false)

        // CURLOPT_CAINFO with the private CA: verified connection.
        let pinned = HTTPClient(configuration: HTTPClientConfiguration(caCertificatePath: server.certificatePath))
        let response = try pinned.send(HTTPRequest(url: url))
        #expect(response.status == 200)

        // A CA file that cannot be read fails TLS set-up; nothing is sent.
        let broken = HTTPClient(configuration: HTTPClientConfiguration(caCertificatePath: "/nonexistent/ca.pem"))
        let badFile = #expect(throws: HTTPClientError.self) { try broken.send(HTTPRequest(url: url)) }
        guard case .tls? = badFile else {
            Issue.record("expected tls, got \(String(describing: badFile))")
            return
        }

        // verifyPeer: false (local testing only) accepts the unknown CA.
        let insecure = HTTPClient(configuration: HTTPClientConfiguration(verifyPeer: false))
        #expect(try insecure.send(HTTPRequest(url: url)).status == 200)
    }

    @Test func httpsToAPlainHTTPServerIsATLSError() throws {
        try withServer(handler: { _ in .text("plain") }) { base in
            let url = base.replacingOccurrences(of: "http://", with: "https://") + "/"
            let error = #expect(throws: HTTPClientError.self) { try HTTPClient().send(HTTPRequest(url: url)) }
            guard case .tls? = error else {
                Issue.record("expected tls, got \(String(describing: error))")
                return
            }
            #expect(error?.requestMayHaveBeenSent == false)
        }
    }
}
