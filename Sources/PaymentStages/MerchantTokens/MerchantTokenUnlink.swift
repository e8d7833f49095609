import Foundation
import HTTP
import JSON
import Pipeline
import Postgres

/// Merchant-initiated unlink of a stored credential (`paypipe credential unlink`): for a merchant token, Apple's
/// "Invalidate a Merchant Token" first [doc] developer.apple.com/documentation/merchanttokennotificationservices/unlinking-merchanttoken
/// (`POST {base}/paymentservices/v1/merchantId/{merchantId}/merchantToken/unlink`, `{"merchantTokenIdentifier"}`),
/// then the credential leaves `active` exactly once. A repeated unlink calls nobody and says so.
public enum MerchantTokenUnlink {
    public static func request(baseURL: String, appleMerchantId: String, merchantTokenIdentifier: String, requestId: String) -> HTTPRequest {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        let merchant = appleMerchantId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? appleMerchantId
        let body: JSONValue = ["merchantTokenIdentifier": .string(merchantTokenIdentifier)]
        return HTTPRequest(
            method: "POST", url: "\(base)/paymentservices/v1/merchantId/\(merchant)/merchantToken/unlink",
            headers: [HTTPHeader(name: "Content-Type", value: "application/json"), HTTPHeader(name: "x-request-id", value: requestId)],
            body: body.serialized())
    }

    /// Whether Apple's answer lets the credential be marked unlinked: `204` is done; `400` ("not valid for the merchant
    /// identifier") is taken as done too, because whether a second unlink of the same token answers 204 or 400 is
    /// [UNCONFIRMED] and the token is unusable either way. Anything else leaves the credential active.
    public static func isDone(status: Int) -> Bool {
        status == 204 || status == 200 || status == 400
    }

    /// What `unlink` did.
    public enum Result: Sendable, Equatable {
        /// Apple told (for an MPAN) and the credential unlinked by this call.
        case unlinked(appleCalled: Bool)
        /// It had already left `active` (unlinked or expired): nothing was called or changed.
        case alreadyInactive(CredentialState)
        /// No such credential for the merchant.
        case notFound
    }

    public enum Failure: Error, Sendable, CustomStringConvertible {
        case noIdentity(String)
        case apple(String)

        public var description: String {
            switch self {
            case .noIdentity(let merchant): "no Apple merchant-token API identity for merchant \(merchant): Apple cannot be told, the credential stays active"
            case .apple(let reason): "Apple did not unlink the merchant token (\(reason)): the credential stays active; try again"
            }
        }
    }

    /// Unlinks `credentialId` of `merchantId`: an active MPAN credential is unlinked at Apple first (with the merchant's
    /// identity), then marked `unlinked` (its secrets shredded) in one statement that only one caller can win.
    public static func unlink(
        _ credentialId: String, merchantId: String, reason: String, credentials: CredentialStore,
        identity: AppleTokenAPIIdentity?, baseURL: String, caCertificatePath: String?, requestId: String = UUID().uuidString.lowercased(),
        on connection: PostgresConnection
    ) throws -> Result {
        guard let credential = try credentials.find(credentialId, merchantId: merchantId, on: connection) else { return .notFound }
        guard credential.state == .active else { return .alreadyInactive(credential.state) }
        var appleCalled = false
        if let token = credential.merchantTokenIdentifier {
            guard let identity else { throw Failure.noIdentity(merchantId) }
            let client = HTTPClient(configuration: HTTPClientConfiguration(
                connectTimeout: 5, totalTimeout: 15, caCertificatePath: caCertificatePath,
                clientCertificatePath: identity.certificatePath, clientKeyPath: identity.keyPath))
            let answer: HTTPResponse
            do {
                answer = try client.send(request(baseURL: baseURL, appleMerchantId: identity.appleMerchantId,
                                                 merchantTokenIdentifier: token, requestId: requestId))
            } catch {
                throw Failure.apple(error.description)
            }
            guard isDone(status: answer.status) else { throw Failure.apple("HTTP \(answer.status)") }
            appleCalled = true
        }
        switch try credentials.markUnlinked(credentialId, merchantId: merchantId, reason: reason, on: connection) {
        case .changed: return .unlinked(appleCalled: appleCalled)
        case .unchanged(let now): return .alreadyInactive(now.state)
        case .notFound: return .notFound
        }
    }
}
