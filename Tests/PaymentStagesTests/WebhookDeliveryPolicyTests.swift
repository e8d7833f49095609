import Foundation
import HTTP
import PaymentStages
import Pipeline
import Testing

@Suite struct WebhookDeliveryPolicyTests {
    @Test(arguments: [
        ("127.0.0.1", true), ("127.8.9.10", true), ("10.1.2.3", true), ("172.16.0.1", true), ("172.31.255.255", true),
        ("172.32.0.1", false), ("192.168.1.1", true), ("169.254.169.254", true), ("169.254.0.1", true), ("169.253.0.1", false),
        ("100.64.0.1", true), ("100.128.0.1", false), ("0.0.0.0", true), ("224.0.0.1", true), ("255.255.255.255", true),
        ("8.8.8.8", false), ("93.184.216.34", false),
        ("::1", true), ("::", true), ("fe80::1", true), ("febf::1", true), ("fc00::1", true), ("fd12:3456::1", true),
        ("ff02::1", true), ("::ffff:127.0.0.1", true), ("::ffff:10.0.0.1", true), ("::ffff:8.8.8.8", false),
        ("64:ff9b::a9fe:a9fe", true), ("2001:4860:4860::8888", false), ("2606:4700::1111", false),
    ])
    func classifiesAddresses(address: String, isInternal: Bool) throws {
        let parsed = try #require(IPAddress(address))
        #expect(parsed.isInternal == isInternal, "\(address)")
    }

    @Test func guardRefusesInternalTargetsUnlessAllowed() {
        let resolver: @Sendable (String) -> [IPAddress] = { host in
            switch host {
            case "public.example": [IPAddress("93.184.216.34")!, IPAddress("2606:4700::1111")!]
            case "rebind.example": [IPAddress("93.184.216.34")!, IPAddress("10.0.0.5")!]
            default: []
            }
        }
        let strict = WebhookURLGuard(allowPrivate: false, resolve: resolver)
        #expect(strict.check("https://public.example/hooks") == .allowed)
        #expect(strict.check("https://rebind.example/hooks") == .refused("host resolves to internal address 10.0.0.5"))
        #expect(strict.check("http://127.0.0.1:9190/webhooks") == .refused("host resolves to internal address 127.0.0.1"))
        #expect(strict.check("http://[::1]:9190/webhooks") == .refused("host resolves to internal address ::1"))
        #expect(strict.check("http://169.254.169.254/latest/meta-data") != .allowed)
        #expect(strict.check("https://nowhere.example/") == .refused("host does not resolve"))
        #expect(strict.check("ftp://public.example/") == .refused("not an http(s) URL"))
        let lax = WebhookURLGuard(allowPrivate: true, resolve: resolver)
        #expect(lax.check("http://127.0.0.1:9190/webhooks") == .allowed)
        #expect(lax.check("file:///etc/passwd") == .refused("not an http(s) URL"))
    }

    /// Obfuscated spellings of internal addresses resolve (as libcurl would resolve them) to what they hide.
    @Test(arguments: ["http://localhost:9190/", "http://0x7f000001/", "http://2130706433/", "http://0177.0.0.1/",
                      "http://[::ffff:169.254.169.254]/", "http://127.1/"])
    func guardSeesThroughObfuscatedInternalHosts(url: String) {
        #expect(WebhookURLGuard(allowPrivate: false).check(url) != .allowed, "\(url)")
    }

    /// IPv6 spellings that embed or translate to an internal IPv4 address, which the guard let through.
    @Test(arguments: ["::127.0.0.1", "::10.0.0.5", "::169.254.169.254", "::ffff:0:127.0.0.1", "::ffff:0:169.254.169.254",
                      "64:ff9b:1::a00:5", "64:ff9b:1:ffff::1", "64:ff9b:1::8.8.8.8"])
    func ipv6FormsOfInternalAddressesAreInternal(text: String) throws {
        #expect(try #require(IPAddress(text)).isInternal, "\(text)")
        #expect(WebhookURLGuard(allowPrivate: false, resolve: { _ in [] }).check("http://[\(text)]/") != .allowed)
    }

    @Test(arguments: ["8.8.8.8", "::ffff:8.8.8.8", "::ffff:0:8.8.8.8", "64:ff9b::8.8.8.8", "2001:4860:4860::8888"])
    func publicAddressesStayPublic(text: String) throws {
        #expect(try !#require(IPAddress(text)).isInternal, "\(text)")
    }

    /// The connected-address check (DNS rebinding) refuses what the guard refuses, and anything that is not an address.
    @Test func theSendGateJudgesTheConnectedPeer() throws {
        let gate = try #require(WebhookURLGuard(allowPrivate: false).sendGate)
        #expect(gate.check(HTTPConnectedPeer(ip: "127.0.0.1", port: 80)) != nil)
        #expect(gate.check(HTTPConnectedPeer(ip: "::ffff:10.0.0.5", port: 80)) != nil)
        #expect(gate.check(HTTPConnectedPeer(ip: "169.254.169.254", port: 80)) != nil)
        #expect(gate.check(HTTPConnectedPeer(ip: "", port: 0)) != nil)
        #expect(gate.check(HTTPConnectedPeer(ip: "93.184.216.34", port: 443)) == nil)
        #expect(WebhookURLGuard(allowPrivate: true).sendGate == nil)
        #expect(WebhookResponseClass.classify(.refusedBeforeSending("connected to internal address 127.0.0.1"))
                == .refused(error: "ssrf_refused: connected to internal address 127.0.0.1"))
    }

    @Test func resolvesLocalhostToLoopback() {
        let addresses = WebhookURLGuard.resolve("localhost")
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy { $0.isInternal })
    }

    @Test func parsesRetryAfter() {
        let now = Date(timeIntervalSince1970: 1_767_225_600)  // Thu, 01 Jan 2026 00:00:00 GMT
        #expect(RetryAfter.seconds("120", now: now) == 120)
        #expect(RetryAfter.seconds(" 0 ", now: now) == 0)
        #expect(RetryAfter.seconds("-5", now: now) == 0)
        #expect(RetryAfter.seconds("Thu, 01 Jan 2026 00:01:30 GMT", now: now) == 90)
        #expect(RetryAfter.seconds("Wed, 31 Dec 2025 23:00:00 GMT", now: now) == 0)
        #expect(RetryAfter.seconds("soon", now: now) == nil)
        #expect(RetryAfter.seconds(nil, now: now) == nil)
    }

    /// RFC 9110's HTTP-date in its three forms, and what is not one: the names are case-sensitive, the day must exist,
    /// and a peer's non-ASCII text (which trapped Foundation's DateFormatter under the fuzzer) is no date at all.
    @Test func parsesEveryHTTPDateFormAndRefusesTheRest() {
        let now = Date(timeIntervalSince1970: 1_767_225_600)  // Thu, 01 Jan 2026 00:00:00 GMT
        #expect(RetryAfter.seconds("Thursday, 01-Jan-26 00:02:00 GMT", now: now) == 120)
        #expect(RetryAfter.seconds("Thu Jan  1 00:00:45 2026", now: now) == 45)
        #expect(RetryAfter.seconds("Sat Jan 10 00:00:00 2026", now: now) == 86_400)
        #expect(RetryAfter.seconds("Thu, 01 Jan 2026 00:00:60 GMT", now: now) == 60)
        #expect(RetryAfter.seconds("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == 0)  // 1994, not 2094
        #expect(RetryAfter.seconds("Saturday, 01-Jan-77 00:00:00 GMT", now: now) == 0)  // 1977: 2077 is more than 50 years ahead
        #expect(RetryAfter.seconds("Wednesday, 01-Jan-76 00:00:00 GMT", now: now) == 86_400)  // 2076: exactly 50, kept
        for refused in ["Fr\u{354}, 1Di c 9999 23:59:59 GMT", "Thu, 01 Jän 2026 00:01:30 GMT", "thu, 01 Jan 2026 00:01:30 GMT",
                        "Thu, 31 Feb 2026 00:01:30 GMT", "Thu, 01 Jan 2026 24:00:00 GMT", "Thu, 01 Jan 2026 00:01:30 UTC",
                        "Thu, 1 Jan 2026 00:01:30 GMT", "Thu, 01 Jan 2026 00:01:30 GMTX",
                        "Thu, 00 Jan 2026 00:01:30 GMT", "Thu, 01 Jan 0000 00:01:30 GMT", "Thu Jan 1 00:00:45 2026"] {
            #expect(RetryAfter.seconds(refused, now: now) == nil, "\(refused)")
        }
    }

    /// A hostile endpoint's delay cannot trap the worker: any delay, in seconds or as a far-future date, is clamped.
    @Test(arguments: ["9223372036854775807", "9223372036854775806", "99999999999", "99999999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT"])
    func clampsHugeRetryAfter(value: String) {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        #expect(RetryAfter.seconds(value, now: now) == 86400)
        #expect(WebhookResponseClass.classify(status: 503, retryAfter: value)
                == .retry(error: "http_503 retry-after=86400s"))
    }

    @Test func classifiesResponses() {
        #expect(WebhookResponseClass.classify(status: 200, retryAfter: nil) == .delivered)
        #expect(WebhookResponseClass.classify(status: 204, retryAfter: nil) == .delivered)
        #expect(WebhookResponseClass.classify(status: 410, retryAfter: nil) == .gone)
        #expect(WebhookResponseClass.classify(status: 301, retryAfter: nil) == .retry(error: "http_301"))
        #expect(WebhookResponseClass.classify(status: 429, retryAfter: "30") == .retry(error: "http_429 retry-after=30s"))
        #expect(WebhookResponseClass.classify(status: 503, retryAfter: "bogus") == .retry(error: "http_503"))
        #expect(WebhookResponseClass.classify(.timedOut(afterSending: true)) == .retry(error: "timeout"))
    }

    @Test func privateTargetsAreAllowedOnlyInSandboxUnlessConfigured() throws {
        #expect(try !NotifyStage.allowsPrivateTargets(.production, environment: EnvironmentReader([:])))
        #expect(try NotifyStage.allowsPrivateTargets(.sandbox, environment: EnvironmentReader([:])))
        #expect(try NotifyStage.allowsPrivateTargets(.production, environment: EnvironmentReader(["PAYPIPE_WEBHOOK_ALLOW_PRIVATE": "1"])))
        #expect(try !NotifyStage.allowsPrivateTargets(.sandbox, environment: EnvironmentReader(["PAYPIPE_WEBHOOK_ALLOW_PRIVATE": "0"])))
        #expect(throws: ConfigurationError.self) {
            try NotifyStage.allowsPrivateTargets(.production, environment: EnvironmentReader(["PAYPIPE_WEBHOOK_ALLOW_PRIVATE": "maybe"]))
        }
    }

    @Test func notifyWorkerDefaultsToTheWebhookSchedule() throws {
        let defaulted = try WorkerConfiguration(stage: .notify, environment: NotifyStage.workerEnvironment(EnvironmentReader(["PAYPIPE_ENV": "sandbox"])))
        #expect(defaulted.retrySchedule.delays == [5, 300, 1800, 7200, 18000, 36000])
        #expect(defaulted.retrySchedule.queueName(stage: .notify, tier: 0) == "paypipe.notify.retry.5s")
        let explicit = try WorkerConfiguration(stage: .notify, environment: NotifyStage.workerEnvironment(EnvironmentReader(["PAYPIPE_ENV": "sandbox", "PAYPIPE_RETRY_DELAYS": "300ms"])))
        #expect(explicit.retrySchedule.delays == [0.3])
    }
}
