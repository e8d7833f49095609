import Foundation
import HTTP
import Testing

@Suite struct HTTPRoundTripTests {
    @Test func getCarriesHeadersBothWaysAndParsesQuery() throws {
        try withServer(handler: echoHandler) { base in
            let client = HTTPClient()
            let response = try client.send(HTTPRequest(
                method: "GET",
                url: base + "/payments/status?order=ORDER-1&amount=10%2E50&flag&order=second",
                headers: [HTTPHeader("X-Custom-Request", "hello world")]
            ))
            #expect(response.status == 200)
            #expect(response.header("x-method") == "GET")
            #expect(response.header("X-PATH") == "/payments/status")
            // Percent-decoded, first occurrence wins, a bare key maps to "".
            #expect(response.header("X-Query") == "amount=10.50&flag=&order=ORDER-1")
            #expect(response.header("X-Echo-Custom") == "hello world")
            #expect(response.header("Content-Length") == "0")
            #expect(response.body.isEmpty)
            #expect(response.totalTime > 0)
        }
    }

    @Test func postEchoes100KilobyteBody() throws {
        let body = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try withServer(handler: echoHandler) { base in
            let response = try HTTPClient().send(HTTPRequest(
                method: "POST", url: base + "/upload",
                headers: [HTTPHeader("Content-Type", "application/octet-stream")], body: body))
            #expect(response.status == 200)
            #expect(response.header("X-Body-Length") == "100000")
            #expect(response.header("X-Echo-Content-Type") == "application/octet-stream")
            let bodyEchoed = response.body == body
            #expect(bodyEchoed)
        }
    }

    @Test func postWithoutContentTypeGetsNoFormDefaultAndEmptyBodyWorks() throws {
        try withServer(handler: echoHandler) { base in
            let client = HTTPClient(configuration: HTTPClientConfiguration(totalTimeout: 3))
            let response = try client.send(HTTPRequest(method: "POST", url: base + "/empty"))
            #expect(response.status == 200)
            #expect(response.header("X-Body-Length") == "0")
            // libcurl would otherwise label the body application/x-www-form-urlencoded.
            #expect(response.header("X-Echo-Content-Type") == nil)
        }
    }

    @Test func customMethodsSendTheirBody() throws {
        try withServer(handler: echoHandler) { base in
            let client = HTTPClient()
            let put = try client.send(HTTPRequest(method: "PUT", url: base + "/r", body: Array("abc".utf8)))
            #expect(put.header("X-Method") == "PUT")
            #expect(put.body == Array("abc".utf8))
            let delete = try client.send(HTTPRequest(method: "DELETE", url: base + "/r"))
            #expect(delete.header("X-Method") == "DELETE")
            let get = try client.send(HTTPRequest(url: base + "/r"))
            #expect(get.header("X-Method") == "GET")
        }
    }

    @Test func handlerStatusAndHelpersAreReturned() throws {
        try withServer(handler: { request in
            request.path == "/json"
                ? .json(Array(#"{"ok":true}"#.utf8), status: 201)
                : .text("no such thing", status: 404)
        }) { base in
            let client = HTTPClient()
            let missing = try client.send(HTTPRequest(url: base + "/missing"))
            #expect(missing.status == 404)
            #expect(String(decoding: missing.body, as: UTF8.self) == "no such thing")
            #expect(missing.header("content-type") == "text/plain; charset=utf-8")
            let json = try client.send(HTTPRequest(url: base + "/json"))
            #expect(json.status == 201)
            #expect(json.header("Content-Type") == "application/json")
            #expect(json.body == Array(#"{"ok":true}"#.utf8))
        }
    }

    @Test func handlerHeaderInjectionBecomes500() throws {
        try withServer(handler: { _ in
            HTTPServerResponse(status: 200, headers: [HTTPHeader("X-Evil", "a\r\nSet-Cookie: x=1")])
        }) { base in
            let response = try HTTPClient().send(HTTPRequest(url: base + "/"))
            #expect(response.status == 500)
            #expect(response.header("Set-Cookie") == nil)
        }
    }

    @Test func oversizedBodyWithDeclaredLengthGets413() throws {
        let calls = Recorder<String>()
        try withServer(maxBodyBytes: 1 << 20, handler: { request in
            calls.append(request.path)
            return .text("ok")
        }) { base in
            let client = HTTPClient()
            // > 1 MiB: libcurl sends Expect: 100-continue, the server answers 413 before the upload.
            let response = try client.send(HTTPRequest(
                method: "POST", url: base + "/big", body: [UInt8](repeating: 7, count: (1 << 20) + 1)))
            #expect(response.status == 413)
            // Exactly at the limit is accepted.
            let atLimit = try client.send(HTTPRequest(
                method: "POST", url: base + "/limit", body: [UInt8](repeating: 7, count: 1 << 20)))
            #expect(atLimit.status == 200)
            #expect(calls.all == ["/limit"])
        }
    }

    @Test func oversizedBodyBelowExpectThresholdGets413() throws {
        // No Expect header under 1 MiB: the server answers 413 without reading the upload and closes.
        try withServer(maxBodyBytes: 1000, handler: { _ in .text("ok") }) { base in
            let client = HTTPClient()
            for size in [1001, 100_000, 900_000] {
                let response = try client.send(HTTPRequest(
                    method: "POST", url: base + "/small-limit", body: [UInt8](repeating: 1, count: size)))
                #expect(response.status == 413, "body of \(size) bytes")
            }
            #expect(try client.send(HTTPRequest(method: "POST", url: base + "/ok", body: [1])).status == 200)
        }
    }

    @Test func pathIsPercentDecoded() throws {
        try withServer(handler: { .text($0.path) }) { base in
            let response = try HTTPClient().send(HTTPRequest(url: base + "/a%20b%2Fc?x=1"))
            #expect(String(decoding: response.body, as: UTF8.self) == "/a b/c")
        }
    }

    @Test func oversizedChunkedBodyGets413AfterDiscarding() throws {
        try withServer(maxBodyBytes: 1000, handler: { _ in .text("ok") }) { base in
            // A chunked upload declares no length, so the server reads and drops it, then answers 413.
            let response = try HTTPClient().send(HTTPRequest(
                method: "POST", url: base + "/chunked",
                headers: [HTTPHeader("Transfer-Encoding", "chunked")],
                body: [UInt8](repeating: 1, count: 5000)))
            #expect(response.status == 413)
        }
    }
}

@Suite struct HTTPClientPoolTests {
    @Test func runsABatchConcurrentlyInOrderOnEachThreadsOwnClient() {
        let pool = HTTPClientPool(size: 4, configuration: HTTPClientConfiguration(), name: "pool-test")
        let started = DispatchTime.now().uptimeNanoseconds
        let results = pool.perform(8) { index, client in
            Thread.sleep(forTimeInterval: 0.2)
            return (index, ObjectIdentifier(client).hashValue)
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        #expect(results.map(\.0) == Array(0..<8), "results come back in index order")
        #expect(seconds < 1.2, "8 jobs of 0.2 s on 4 threads take about 0.4 s, not 1.6 s (took \(seconds))")
        // A second batch runs on the same threads and so on the same (kept-alive) clients.
        let again = pool.perform(4) { _, client in ObjectIdentifier(client).hashValue }
        #expect(Set(results.map(\.1)).count <= 4)
        #expect(Set(again).isSubset(of: Set(results.map(\.1))))
    }
}
