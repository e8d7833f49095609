import Foundation
import HTTP

/// The client identity for Apple's merchant-token API: Apple's merchant identifier (`merchant.com.example`, the
/// `{merchantId}` of the URL) and the PEM files of the certificate and unencrypted key presented over mutual TLS. That
/// it is the Merchant Identity Certificate (the merchant-validation one) is [UNCONFIRMED] (docs/merchant-tokens.md).
public struct AppleTokenAPIIdentity: Sendable, Hashable {
    public var appleMerchantId: String
    public var certificatePath: String
    public var keyPath: String

    public init(appleMerchantId: String, certificatePath: String, keyPath: String) {
        self.appleMerchantId = appleMerchantId
        self.certificatePath = certificatePath
        self.keyPath = keyPath
    }
}

/// The pure side of pulling one queued event: the request, and what an answer means for the row.
public enum MerchantTokenEventPull {
    /// Apple keeps an event retrievable for 7 days after the notification (the Management API overview) [doc].
    public static let window: Double = 7 * 86_400
    /// Backoff between failed pulls: 30 s doubling, at most an hour.
    static let firstRetry: Double = 30
    static let longestRetry: Double = 3_600

    /// `GET {base}/paymentservices/v1/merchantId/{merchantId}/merchantToken/event/{eventId}` with the two headers
    /// Apple requires, `Content-Type` and `x-request-id` (a fresh id per call, our choice: the format is not given) [doc].
    public static func request(baseURL: String, appleMerchantId: String, eventId: String, requestId: String) -> HTTPRequest {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        func segment(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? text }
        return HTTPRequest(
            method: "GET", url: "\(base)/paymentservices/v1/merchantId/\(segment(appleMerchantId))/merchantToken/event/\(segment(eventId))",
            headers: [HTTPHeader(name: "Content-Type", value: "application/json"), HTTPHeader(name: "Accept", value: "application/json"),
                      HTTPHeader(name: "x-request-id", value: requestId)])
    }

    /// What became of one pull.
    public enum Outcome: Sendable, Equatable {
        /// Apple's answer, decoded and decided: the row becomes `pulled` with the event's fields.
        case pulled(MerchantTokenEvent, MerchantTokenEventAction)
        /// Try again at `at` (a transport failure, Apple's 5xx, or no identity for the merchant yet).
        case retry(at: Date, reason: String)
        /// Given up: Apple refused the event (4xx), its answer is unusable, or the 7 days have passed.
        case failed(String)
    }

    /// How an attempt ended, before its meaning is decided.
    public enum Answer: Sendable, Equatable {
        case response(status: Int, body: [UInt8])
        case transportFailed(String)
        case noIdentity(String)
    }

    /// The decision for one attempt (`attempts` counts this one) of an event notified at `receivedAt`.
    public static func decide(_ answer: Answer, receivedAt: Date, attempts: Int, now: Date) -> Outcome {
        func retry(_ reason: String) -> Outcome {
            let delay = min(longestRetry, firstRetry * pow(2, Double(max(0, attempts - 1))))
            let at = now.addingTimeInterval(delay)
            guard at < receivedAt.addingTimeInterval(window) else {
                return .failed("\(reason); Apple's 7-day window for the event ends before the next attempt")
            }
            return .retry(at: at, reason: reason)
        }
        switch answer {
        case .noIdentity(let reason):
            return retry(reason)
        case .transportFailed(let reason):
            return retry("Apple's merchant-token API unreachable: \(reason)")
        case .response(let status, let body) where status >= 500 || status == 429:
            return retry("Apple answered \(status): \(errorMessage(body))")
        case .response(let status, let body) where status != 200:
            return .failed("Apple answered \(status): \(errorMessage(body))")
        case .response(_, let body):
            do {
                let event = try MerchantTokenEvent.decode(body)
                return .pulled(event, MerchantTokenEventAction.decide(event))
            } catch {
                return .failed(error.description)
            }
        }
    }

    /// Apple's `ErrorResponse` text (`errorMessage`, `statusCode`, `subStatusCode`), or the body's start.
    static func errorMessage(_ body: [UInt8]) -> String {
        String(decoding: body.prefix(300), as: UTF8.self)
    }
}

extension AppleTokenAPIIdentity {
    /// A merchant's identity from `PAYPIPE_APPLE_IDENTITY_DIRECTORY`: `<directory>/<merchantId>/merchant-identifier`
    /// (Apple's merchant identifier, one line), `identity.cert.pem` and `identity.key.pem` (unencrypted). nil when the
    /// merchant has no such directory or a file is missing.
    public static func fromDirectory(_ directory: String, merchantId: String) -> AppleTokenAPIIdentity? {
        guard MerchantTokenNotification.isIdentifier(merchantId), !merchantId.hasPrefix(".") else { return nil }
        let base = URL(fileURLWithPath: directory).appendingPathComponent(merchantId)
        let certificate = base.appendingPathComponent("identity.cert.pem").path
        let key = base.appendingPathComponent("identity.key.pem").path
        guard let identifier = try? String(contentsOf: base.appendingPathComponent("merchant-identifier"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines), !identifier.isEmpty,
              FileManager.default.isReadableFile(atPath: certificate), FileManager.default.isReadableFile(atPath: key) else { return nil }
        return AppleTokenAPIIdentity(appleMerchantId: identifier, certificatePath: certificate, keyPath: key)
    }

    /// The merchants with a usable identity in `directory` (sorted): whom the puller asks for a bare-path event.
    public static func merchants(inDirectory directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { fromDirectory(directory, merchantId: $0) != nil }.sorted()
    }
}

extension MerchantTokenEventPull {
    /// What Apple's bare path (`GET /notification/merchantToken/{eventId}`, no merchant in the path) resolves to.
    public enum BareResolution: Sendable, Equatable {
        /// Exactly one merchant's identity was served the event: the row becomes that merchant's, decided on its answer.
        case merchant(String, Outcome)
        /// No merchant: the row stays without one, retried within Apple's 7 days or failed.
        case unresolved(Outcome)
    }

    /// The merchant of a bare-path event, from the answers Apple gave each configured merchant identity asked in turn
    /// (docs/merchant-tokens.md "Apple's bare path") **[our choice]**. Apple serves an event only to the Apple merchant
    /// whose certificate asked (mutual TLS), so the one merchant answered 200 is the event's; the merchant is never
    /// inferred from the token (an identifier in two merchants' credentials, or replayed under the bare path, never
    /// reaches another merchant's). Two merchants served the same event (identities sharing an Apple merchant id)
    /// are not guessed between: the event fails. Nobody served: retried like a missing identity until the 7 days end
    /// (an identity may be added; Apple may be down).
    public static func resolveBare(_ answers: [(merchantId: String, answer: Answer)], receivedAt: Date, attempts: Int,
                                   now: Date) -> BareResolution {
        let served = answers.filter { if case .response(200, _) = $0.answer { true } else { false } }
        let merchants = Set(served.map(\.merchantId)).sorted()
        if merchants.count > 1 {
            return .unresolved(.failed("Apple's bare path: more than one merchant's identity was served the event "
                                       + "(\(merchants.joined(separator: ", "))); it is applied to none"))
        }
        if let first = served.first {
            return .merchant(first.merchantId, decide(first.answer, receivedAt: receivedAt, attempts: attempts, now: now))
        }
        let asked = answers.map { "\($0.merchantId): \(summary($0.answer))" }.joined(separator: "; ")
        let reason = answers.isEmpty
            ? "the notification named no merchant (Apple's bare path) and no merchant has an identity"
            : "Apple's bare path: no merchant's identity was served the event (\(asked))"
        return .unresolved(decide(.noIdentity(reason), receivedAt: receivedAt, attempts: attempts, now: now))
    }

    static func summary(_ answer: Answer) -> String {
        switch answer {
        case .response(let status, let body): "\(status) \(errorMessage(body))"
        case .transportFailed(let reason): "unreachable: \(reason)"
        case .noIdentity(let reason): reason
        }
    }
}
