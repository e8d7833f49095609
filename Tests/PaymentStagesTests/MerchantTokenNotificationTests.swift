import Foundation
import HTTP
import JSON
import PaymentStages
import Testing

/// The pure side of Apple's merchant-token lifecycle: the notification path, the source allow list, the decoding of
/// Apple's event answer and what each event type means. No service.
@Suite struct MerchantTokenNotificationTests {
    @Test func theNotificationPathIsApplesWithAnOptionalMerchantPrefix() {
        #expect(MerchantTokenNotification.parse(path: "/notification/merchantToken/4f1c2a9e-0b1d")
            == MerchantTokenNotification(merchantId: nil, eventId: "4f1c2a9e-0b1d"))
        #expect(MerchantTokenNotification.parse(path: "/merchant.com.example/notification/merchantToken/E1")
            == MerchantTokenNotification(merchantId: "merchant.com.example", eventId: "E1"))
        for path in ["/notification/merchantToken/", "/notification/merchantToken", "/notification/merchanttoken/E1",
                     "/a/b/notification/merchantToken/E1", "notification/merchantToken/E1", "/notification/merchantToken/E 1",
                     "/notification/merchantToken/E1/", "//notification/merchantToken/E1",
                     "/notification/merchantToken/" + String(repeating: "a", count: 129), "/healthz"] {
            #expect(MerchantTokenNotification.parse(path: path) == nil, "\(path)")
        }
        #expect(MerchantTokenNotification.parse(path: "/notification/merchantToken/" + String(repeating: "a", count: 128)) != nil)
    }

    @Test func applesNetworksAreTheDefaultAndOthersAreRefused() throws {
        let apple = try #require(NotificationSourcePolicy.parse(NotificationSourcePolicy.appleNetworks.joined(separator: ",")))
        #expect(apple.allows(remoteAddress: "17.58.0.1:443"))
        #expect(apple.allows(remoteAddress: "17.58.63.255:1"))
        #expect(!apple.allows(remoteAddress: "17.58.64.0:1"))
        #expect(apple.allows(remoteAddress: "17.58.192.7:5000"))
        #expect(!apple.allows(remoteAddress: "17.59.0.1:443"))
        #expect(!apple.allows(remoteAddress: "127.0.0.1:80"))
        #expect(!apple.allows(remoteAddress: nil))
        #expect(!apple.allows(remoteAddress: "[::ffff:10.0.0.1]:80"))
        let v6 = try #require(NotificationSourcePolicy.parse("2001:db8::/32, 10.0.0.0/8"))
        #expect(v6.allows(remoteAddress: "[2001:db8::5]:443"))
        #expect(v6.allows(remoteAddress: "10.1.2.3:1"))
        #expect(!v6.allows(remoteAddress: "[2001:db9::5]:443"))
        #expect(NotificationSourcePolicy.parse("any") == .any)
        #expect(NotificationSourcePolicy.any.allows(remoteAddress: nil))
        for bad in ["", "17.58.0.0", "17.58.0.0/33", "example.com/8", "17.58.0.0/18,", "::/129"] {
            #expect(NotificationSourcePolicy.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func theAnswerIsDecidedBeforeTheWrite() {
        let apple = NotificationSourcePolicy.networks([IPNetwork("17.58.0.0/18")!])
        let path = "/m1/notification/merchantToken/E1"
        #expect(NotificationAnswer.decide(method: "GET", path: path, remoteAddress: "17.58.1.1:9", sources: apple)
            == .queued(MerchantTokenNotification(merchantId: "m1", eventId: "E1")))
        #expect(NotificationAnswer.decide(method: "GET", path: path, remoteAddress: "8.8.8.8:9", sources: apple) == .forbidden)
        #expect(NotificationAnswer.decide(method: "POST", path: path, remoteAddress: "17.58.1.1:9", sources: apple) == .methodNotAllowed)
        #expect(NotificationAnswer.decide(method: "GET", path: "/metrics", remoteAddress: "17.58.1.1:9", sources: apple) == .notFound)
    }

    /// Apple's documented example shape (reference: developer.apple.com/documentation/merchanttokennotificationservices/merchanttokeneventresponse).
    @Test func applesEventAnswerDecodesAndEachTypeHasItsMeaning() throws {
        let body = Array("""
            {"eventType":"UNLINK","merchantTokenIdentifier":"DNITHE000000000000000001","reason":"USER",
             "merchantTokenMetadata":{"cardArt":[],"cardMetadata":{"fpanSuffix":"1234","expirationDate":"122030"}}}
            """.utf8)
        let event = try MerchantTokenEvent.decode(body)
        #expect(event.type == .unlink && event.merchantTokenIdentifier == "DNITHE000000000000000001" && event.reason == "USER")
        #expect(event.metadata?["cardMetadata"]?["fpanSuffix"]?.stringValue == "1234")
        #expect(MerchantTokenEventAction.decide(event) == .unlink(merchantTokenIdentifier: "DNITHE000000000000000001", reason: "USER"))

        for type in ["UPDATED_METADATA", "UPDATED_CARD_ART"] {
            let update = try MerchantTokenEvent.decode(Array(#"{"eventType":"\#(type)","merchantTokenIdentifier":"T","reason":"ISSUER","merchantTokenMetadata":{"cardArt":[{"url":"https://x/a.png"}]}}"#.utf8))
            guard case .updateMetadata(let identifier, let metadata) = MerchantTokenEventAction.decide(update) else {
                Issue.record("\(type) is no metadata update"); continue
            }
            #expect(identifier == "T" && metadata?["cardArt"]?[0]?["url"]?.stringValue == "https://x/a.png")
        }
        let key = try MerchantTokenEvent.decode(Array(#"{"eventType":"UPDATED_MERCHANT_TOKEN_PUBLIC_KEY","merchantTokenIdentifier":"T","reason":"r"}"#.utf8))
        #expect(key.type == .updatedMerchantTokenPublicKey && key.metadata == nil)
        guard case .ignore = MerchantTokenEventAction.decide(key) else { Issue.record("a key update changes nothing"); return }
        let future = try MerchantTokenEvent.decode(Array(#"{"eventType":"SOMETHING_NEW","merchantTokenIdentifier":"T","reason":"r"}"#.utf8))
        #expect(future.type == .other("SOMETHING_NEW") && future.type.rawValue == "SOMETHING_NEW")
        guard case .ignore = MerchantTokenEventAction.decide(future) else { Issue.record("an unknown type is ignored, never failed"); return }
    }

    @Test func aBrokenEventAnswerIsAClassifiedError() {
        let cases: [(String, MerchantTokenEventError)] = [
            ("not json", .notJSON("")),
            ("[]", .notJSON("not an object")),
            (#"{"merchantTokenIdentifier":"T","reason":"r"}"#, .missing("eventType")),
            (#"{"eventType":"UNLINK","reason":"r"}"#, .missing("merchantTokenIdentifier")),
            (#"{"eventType":"UNLINK","merchantTokenIdentifier":"T"}"#, .missing("reason")),
            (#"{"eventType":1,"merchantTokenIdentifier":"T","reason":"r"}"#, .invalid("eventType", "not a string")),
            (#"{"eventType":"UNLINK","merchantTokenIdentifier":"\#(String(repeating: "x", count: 65))","reason":"r"}"#,
             .invalid("merchantTokenIdentifier", "empty or longer than 64")),
            (#"{"eventType":"UNLINK","merchantTokenIdentifier":"T","reason":"r","merchantTokenMetadata":"x"}"#,
             .invalid("merchantTokenMetadata", "not an object")),
        ]
        for (body, expected) in cases {
            do {
                _ = try MerchantTokenEvent.decode(Array(body.utf8))
                Issue.record("\(body) decoded")
            } catch {
                if case .notJSON = expected, case .notJSON = error { continue }
                #expect(error == expected, "\(body)")
            }
        }
    }
}

/// Pulling one event: Apple's request shape and what each answer does to the row. Clock injected.
@Suite struct MerchantTokenEventPullTests {
    let notified = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func theRequestIsApplesWithBothRequiredHeaders() {
        let request = MerchantTokenEventPull.request(baseURL: "https://apple-pay-gateway.apple.com/", appleMerchantId: "merchant.com.example",
                                                     eventId: "4f1c-2a9e", requestId: "req-1")
        #expect(request.method == "GET")
        #expect(request.url == "https://apple-pay-gateway.apple.com/paymentservices/v1/merchantId/merchant.com.example/merchantToken/event/4f1c-2a9e")
        #expect(request.headers.value(for: "x-request-id") == "req-1")
        #expect(request.headers.value(for: "Content-Type") == "application/json")
    }

    @Test func eachAnswerSettlesTheEventOrSchedulesTheNextAttempt() throws {
        let body = Array(#"{"eventType":"UNLINK","merchantTokenIdentifier":"T1","reason":"USER"}"#.utf8)
        let pulled = MerchantTokenEventPull.decide(.response(status: 200, body: body), receivedAt: notified, attempts: 1, now: notified)
        guard case .pulled(let event, .unlink(merchantTokenIdentifier: "T1", reason: "USER")) = pulled else { Issue.record("\(pulled)"); return }
        #expect(event.type == .unlink)
        // Apple's 5xx and transport failures retry, backing off (30 s, 60 s, … at most an hour).
        let later = notified.addingTimeInterval(100)
        #expect(MerchantTokenEventPull.decide(.response(status: 500, body: []), receivedAt: notified, attempts: 1, now: later)
            == .retry(at: later.addingTimeInterval(30), reason: "Apple answered 500: "))
        guard case .retry(let at, _) = MerchantTokenEventPull.decide(.transportFailed("TLS handshake"), receivedAt: notified, attempts: 3, now: later),
              at == later.addingTimeInterval(120) else { Issue.record("third attempt waits 120 s"); return }
        guard case .retry(let capped, _) = MerchantTokenEventPull.decide(.noIdentity("none"), receivedAt: notified, attempts: 20, now: later),
              capped == later.addingTimeInterval(3_600) else { Issue.record("the wait is capped at an hour"); return }
        // Past Apple's 7 days there is no next attempt.
        let lastDay = notified.addingTimeInterval(7 * 86_400 - 10)
        guard case .failed = MerchantTokenEventPull.decide(.response(status: 503, body: []), receivedAt: notified, attempts: 2, now: lastDay) else {
            Issue.record("an attempt after the window is no attempt"); return
        }
        // Apple refusing the event, or an unusable answer, is final.
        guard case .failed(let refused) = MerchantTokenEventPull.decide(.response(status: 400, body: Array(#"{"statusCode":400}"#.utf8)),
                                                                          receivedAt: notified, attempts: 1, now: later) else { Issue.record("400"); return }
        #expect(refused.contains("400"))
        guard case .failed(let unusable) = MerchantTokenEventPull.decide(.response(status: 200, body: Array("{}".utf8)),
                                                                           receivedAt: notified, attempts: 1, now: later) else { Issue.record("{}"); return }
        #expect(unusable.contains("eventType"))
    }

    /// Apple's bare path: the event is the merchant's whose identity Apple served it to, decided on that answer; never
    /// a guess between two, never from the token; nobody served it: retried within the 7 days, then failed.
    @Test func aBarePathEventIsTheMerchantsWhoseIdentityAppleServedIt() throws {
        let notified = Date(timeIntervalSince1970: 1_800_000_000)
        let served = MerchantTokenEventPull.Answer.response(status: 200, body: Array(#"{"eventType":"UNLINK","merchantTokenIdentifier":"DNITHE1","reason":"USER"}"#.utf8))
        let refused = MerchantTokenEventPull.Answer.response(status: 400, body: Array(#"{"statusCode":400,"errorMessage":"unknown event"}"#.utf8))
        func resolve(_ answers: [(merchantId: String, answer: MerchantTokenEventPull.Answer)], attempts: Int = 1, now: Date? = nil)
            -> MerchantTokenEventPull.BareResolution {
            MerchantTokenEventPull.resolveBare(answers, receivedAt: notified, attempts: attempts, now: now ?? notified)
        }
        #expect(resolve([("m-a", refused), ("m-b", served)])
                == .merchant("m-b", .pulled(try MerchantTokenEvent.decode(Array(#"{"eventType":"UNLINK","merchantTokenIdentifier":"DNITHE1","reason":"USER"}"#.utf8)),
                                            .unlink(merchantTokenIdentifier: "DNITHE1", reason: "USER"))))
        // Served to one merchant with an unusable answer: that merchant's event, failed.
        guard case .merchant("m-a", .failed) = resolve([("m-a", .response(status: 200, body: Array("{}".utf8))), ("m-b", refused)]) else {
            Issue.record("an unusable answer fails the served merchant's event"); return
        }
        guard case .unresolved(.failed(let ambiguous)) = resolve([("m-a", served), ("m-b", served)]) else {
            Issue.record("two merchants served: applied to none"); return
        }
        #expect(ambiguous.contains("m-a, m-b"))
        guard case .unresolved(.retry(_, let nobody)) = resolve([("m-a", refused), ("m-b", .transportFailed("TLS handshake"))]) else {
            Issue.record("nobody served: retried"); return
        }
        #expect(nobody.contains("m-a: 400 ") && nobody.contains("m-b: unreachable: TLS handshake"), "\(nobody)")
        guard case .unresolved(.retry(_, let none)) = resolve([]) else { Issue.record("no identity: retried"); return }
        #expect(none.contains("no merchant has an identity"))
        let lastDay = notified.addingTimeInterval(MerchantTokenEventPull.window - 10)
        guard case .unresolved(.failed) = resolve([("m-a", refused)], attempts: 3, now: lastDay) else {
            Issue.record("after Apple's 7 days the event fails"); return
        }
    }
}
