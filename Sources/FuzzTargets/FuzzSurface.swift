/// The parsers one fuzz input is routed to. The first byte of an input selects the surface (modulo the number of
/// surfaces, so every byte value is meaningful); the remaining bytes are that surface's payload.
///
/// One target with a selector byte instead of one binary per surface: a single sanitized build, one corpus, and
/// libFuzzer's mutations can move an interesting payload from one surface to another (a token's base64 field is
/// also a base64 input, a certificate from a CMS blob also an X.509 input).
public enum FuzzSurface: UInt8, CaseIterable, Sendable, CustomStringConvertible {
    /// A raw `paypipe.jobs` message body, as the decrypt worker takes it: `PaymentJob.decode`, then the token
    /// parse and signature verification of `DecryptStage` (trust root: the pinned Apple Root CA - G3).
    case job = 0
    /// Apple Pay token JSON in any accepted form: `ApplePayToken.parse`, then `ApplePayDecryptor.verify`.
    case token = 1
    /// `Base64.decode`, checked against Foundation's decoder (every string PayPipe accepts Foundation decodes alike).
    case base64 = 2
    /// A CMS SignedData (DER/BER) as a token's `signature`: CMS parse, embedded X.509 certificates, chain to the
    /// trust root, signed attributes.
    case cms = 3
    /// Any BER/DER: `DERReader` plus a bounded walk reading every element as OID, INTEGER, time, nested DER.
    case der = 4
    /// An X.509 certificate DER: OpenSSL parse, PayPipe's TBSCertificate reading, Apple extensions (marker OIDs,
    /// merchant identifier hash), chain verification against the trust root.
    case x509 = 5
    /// A decrypted token payload: `DecryptedPaymentData.decode`.
    case payload = 6
    /// Strict JSON: `JSONValue.parse`, checked for a stable serialize → parse round trip.
    case json = 7
    /// A webhook endpoint's answer as notify reads it: two bytes of status, then the raw header block, line by line
    /// through `HTTPHeaderLine.parse` (what the HTTP client does with libcurl's lines), then `RetryAfter.seconds` and
    /// `WebhookResponseClass.classify`. Oracle: the delay is always within 0…`RetryAfter.maximumSeconds`.
    case webhookResponse = 8
    /// A gateway's HTTP body as the submit stage reads it: strict JSON, the `jwt` member verified as HS256 with a fixed
    /// secret (`JWTVerifier`), and the document's claims through `TrustPaymentsResponseMapper` (result and query forms).
    case gatewayResponse = 9

    /// The surface an input's first byte selects.
    public init(selector: UInt8) {
        self = FuzzSurface(rawValue: selector % UInt8(FuzzSurface.allCases.count))!
    }

    /// `payload` framed as an input for this surface (selector byte first), as the seed corpus stores it.
    public func framed(_ payload: some Sequence<UInt8>) -> [UInt8] {
        [rawValue] + Array(payload)
    }

    public var description: String {
        switch self {
        case .job: "job"
        case .token: "token"
        case .base64: "base64"
        case .cms: "cms"
        case .der: "der"
        case .x509: "x509"
        case .payload: "payload"
        case .json: "json"
        case .webhookResponse: "webhook_response"
        case .gatewayResponse: "gateway_response"
        }
    }
}
