import HTTP
import Synchronization
import Testing

@Suite struct HTTPSendGateTests {
    @Test func refusalAfterConnectSendsNothingAndNamesTheReason() throws {
        let served = Mutex(0)
        try withServer(handler: { _ in
            served.withLock { $0 += 1 }
            return .text("should not be reached")
        }) { base in
            let seen = Mutex<[HTTPConnectedPeer]>([])
            let gate = HTTPSendGate { peer in
                seen.withLock { $0.append(peer) }
                return "peer \(peer.ip) is not allowed"
            }
            let error = #expect(throws: HTTPClientError.self) {
                try HTTPClient().send(HTTPRequest(method: "POST", url: base + "/hook", body: [1], sendGate: gate))
            }
            guard case .refusedBeforeSending(let reason)? = error else {
                Issue.record("expected refusedBeforeSending, got \(String(describing: error))")
                return
            }
            #expect(reason == "peer 127.0.0.1 is not allowed")
            #expect(error?.requestMayHaveBeenSent == false)
            let peers = seen.withLock { $0 }
            #expect(peers.count == 1)
            #expect(peers.first?.ip == "127.0.0.1")
            #expect(peers.first.map { base.hasSuffix(":\($0.port)") } == true)
        }
        #expect(served.withLock { $0 } == 0)
    }

    @Test func allowingGateLetsTheRequestThroughOnEveryAttempt() throws {
        try withServer(handler: { _ in .text("ok") }) { base in
            let calls = Mutex(0)
            let gate = HTTPSendGate { _ in
                calls.withLock { $0 += 1 }
                return nil
            }
            let client = HTTPClient()
            for _ in 0..<2 {
                let response = try client.send(HTTPRequest(method: "POST", url: base + "/", body: [1], sendGate: gate))
                #expect(response.status == 200)
            }
            #expect(calls.withLock { $0 } == 2)
        }
    }

    @Test func combinedGatesRefuseOnTheFirstRefusal() {
        let peer = HTTPConnectedPeer(ip: "10.0.0.5", port: 443)
        let allow = HTTPSendGate { _ in nil }
        let refuse = HTTPSendGate { _ in "late" }
        #expect(allow.and(allow).check(peer) == nil)
        #expect(allow.and(refuse).check(peer) == "late")
        #expect(HTTPSendGate { _ in "private" }.and(refuse).check(peer) == "private")
    }
}
