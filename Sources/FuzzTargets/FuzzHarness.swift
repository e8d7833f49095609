import ApplePay
import Crypto
import Foundation
import HTTPTypes
import JSON
import JWT
import PaymentDomain
import TrustPaymentsWire

/// The function the fuzzer calls for every input, and the unit tests for every regression input.
///
/// It drives PayPipe's own parsing code exactly as the pipeline does (no copies of it), stateless per input so a
/// crash always reproduces from its file alone: a fresh `ApplePayDecryptor` (and so an empty chain cache) per
/// input, a fixed verification clock, and the production trust root (the pinned Apple Root CA - G3), so real token
/// vectors from the fixtures go all the way through chain and signer-signature verification.
public enum FuzzHarness {
    /// The verification clock: fixed, so outcomes never depend on when the fuzzer runs.
    public static let verificationClock = Date(timeIntervalSince1970: 1_700_000_000)

    /// Runs one framed input (selector byte, then payload). An empty input is rejected as such.
    public static func run(_ input: [UInt8]) -> FuzzOutcome {
        guard let selector = input.first else { return FuzzOutcome(.job, .rejected(code: "empty_input")) }
        return run(FuzzSurface(selector: selector), Array(input.dropFirst()))
    }

    /// Runs `payload` through one surface.
    public static func run(_ surface: FuzzSurface, _ payload: [UInt8]) -> FuzzOutcome {
        switch surface {
        case .job: job(payload)
        case .token: verify(.token, tokenJSON: payload)
        case .base64: base64(payload)
        case .cms: cms(payload)
        case .der: der(payload)
        case .x509: x509(payload)
        case .payload: decryptedPayload(payload)
        case .json: json(payload)
        case .webhookResponse: webhookResponse(payload)
        case .gatewayResponse: gatewayResponse(payload)
        }
    }

    // MARK: Peers' answers

    /// The header block as the HTTP client reads libcurl's lines, then the `Retry-After` value notify records. The two
    /// status bytes frame the input (the seed corpus keeps them); the status itself decides nothing a parser does.
    static func webhookResponse(_ bytes: [UInt8]) -> FuzzOutcome {
        guard bytes.count >= 2 else { return FuzzOutcome(.webhookResponse, .rejected(code: "too_short")) }
        var headers: [HTTPHeader] = []
        for line in bytes.dropFirst(2).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            switch HTTPHeaderLine.parse(line) {
            case .statusLine: headers.removeAll()
            case .field(let header): headers.append(header)
            case .ignored: break
            }
        }
        guard let seconds = RetryAfter.seconds(headers.value(for: "retry-after"), now: verificationClock) else {
            return FuzzOutcome(.webhookResponse, .rejected(code: "no_retry_after"))
        }
        guard (0...RetryAfter.maximumSeconds).contains(seconds) else {
            return FuzzOutcome(.webhookResponse, .oracleFailure("Retry-After gave \(seconds) s, outside 0…\(RetryAfter.maximumSeconds)"))
        }
        return FuzzOutcome(.webhookResponse, .accepted)
    }

    /// The secret the gateway-response seeds are signed with.
    public static let gatewaySecret = "fuzz-gateway-secret"

    static func gatewayResponse(_ body: [UInt8]) -> FuzzOutcome {
        let document: JSONValue
        do {
            document = try JSONValue.parse(body)
        } catch {
            return FuzzOutcome(.gatewayResponse, .rejected(code: "invalid_json"), detail: error.description)
        }
        // A verified answer's claims and the raw document alike go through the mapper: a gateway holding the secret is
        // still a peer whose values must not crash a worker.
        _ = TrustPaymentsResponseMapper.result(fromClaims: document)
        _ = TrustPaymentsResponseMapper.queryResult(fromClaims: document)
        guard let token = document["jwt"]?.stringValue else { return FuzzOutcome(.gatewayResponse, .rejected(code: "no_jwt")) }
        do {
            let verified = try JWTVerifier(key: Array(gatewaySecret.utf8), algorithms: [.hs256], clockSkew: 300).verify(token)
            _ = TrustPaymentsResponseMapper.result(fromClaims: verified.claims)
            _ = TrustPaymentsResponseMapper.queryResult(fromClaims: verified.claims)
            return FuzzOutcome(.gatewayResponse, .accepted)
        } catch {
            return FuzzOutcome(.gatewayResponse, .rejected(code: "jwt_rejected"))
        }
    }

    // MARK: Ingress: job → token → verification

    /// What `DecryptStage.decode` and `DecryptStage.process` do with a delivery body, minus the database.
    static func job(_ body: [UInt8]) -> FuzzOutcome {
        let job: PaymentJob
        do {
            job = try PaymentJob.decode(body)
        } catch {
            switch error {
            case .unaddressed(let reason): return FuzzOutcome(.job, .rejected(code: "malformed_job"), detail: reason)
            case .invalid(_, _, _, let reason): return FuzzOutcome(.job, .rejected(code: "invalid_job"), detail: reason)
            }
        }
        _ = try? JSONEncoder().encode(job.metadata)  // stored as jsonb by the decrypt stage (PaymentStore.insertNew)
        return verify(.job, tokenJSON: job.applePayToken)
    }

    static func verify(_ surface: FuzzSurface, tokenJSON: [UInt8]) -> FuzzOutcome {
        do {
            return verify(surface, token: try ApplePayToken.parse(tokenJSON))
        } catch {
            return FuzzOutcome(surface, .rejected(code: error.code), detail: error.message)
        }
    }

    static func verify(_ surface: FuzzSurface, token: ApplePayToken) -> FuzzOutcome {
        _ = token.paymentDataJSON  // the gateway-decrypts re-serialisation
        do {
            try ApplePayDecryptor().verify(token, now: verificationClock)
            return FuzzOutcome(surface, .accepted)
        } catch {
            return FuzzOutcome(surface, .rejected(code: error.code), detail: error.message)
        }
    }

    /// A well-formed EC_v1 token whose `signature` each CMS input replaces.
    static let cmsTemplate: ApplePayToken = {
        func zeros(_ count: Int) -> String { Data(count: count).base64EncodedString() }
        let json = """
            {"version":"EC_v1","data":"\(zeros(48))","signature":"AA==",\
            "header":{"publicKeyHash":"\(zeros(32))","transactionId":"00","ephemeralPublicKey":"\(zeros(91))"}}
            """
        do {
            return try ApplePayToken.parse(json)
        } catch {
            fatalError("the CMS template token is a constant and must parse: \(error)")
        }
    }()

    static func cms(_ der: [UInt8]) -> FuzzOutcome {
        var token = cmsTemplate
        token.signature = der
        return verify(.cms, token: token)
    }

    // MARK: Encodings

    /// `Base64.decode` may reject what Foundation accepts (non-canonical padding) but must never accept something
    /// Foundation rejects or decode it differently.
    static func base64(_ text: [UInt8]) -> FuzzOutcome {
        _ = Hex.decode(String(decoding: text, as: UTF8.self))
        guard let decoded = text.withUnsafeBufferPointer({ Base64.decode($0) }) else {
            return FuzzOutcome(.base64, .rejected(code: "invalid_base64"))
        }
        guard let reference = Data(base64Encoded: Data(text)), Array(reference) == decoded else {
            return FuzzOutcome(.base64, .oracleFailure("Base64.decode accepted input that Foundation decodes differently or rejects"))
        }
        return FuzzOutcome(.base64, .accepted)
    }

    /// Strict parse, then serialize → parse → serialize must reproduce the first serialization.
    static func json(_ bytes: [UInt8]) -> FuzzOutcome {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            return FuzzOutcome(.json, .rejected(code: "invalid_json"), detail: error.description)
        }
        let serialized = value.serialized()
        guard let reparsed = try? JSONValue.parse(serialized), reparsed.serialized() == serialized else {
            return FuzzOutcome(.json, .oracleFailure("serialized JSON does not parse back to the same document"))
        }
        return FuzzOutcome(.json, .accepted)
    }

    static func decryptedPayload(_ plaintext: [UInt8]) -> FuzzOutcome {
        do {
            let data = try DecryptedPaymentData.decode(plaintext)
            _ = data.masked.description
            return FuzzOutcome(.payload, .accepted)
        } catch {
            return FuzzOutcome(.payload, .rejected(code: error.code), detail: error.message)
        }
    }

    // MARK: ASN.1 and X.509

    static func der(_ bytes: [UInt8]) -> FuzzOutcome {
        do {
            var walker = ASN1Walk()
            try walker.visit(DERReader.parse(bytes), depth: 0)
            if let failure = walker.oracleFailure { return FuzzOutcome(.der, .oracleFailure(failure)) }
            return FuzzOutcome(.der, .accepted)
        } catch {
            return FuzzOutcome(.der, .rejected(code: "decoding_failed"), detail: error.description)
        }
    }

    /// Everything PayPipe reads from a certificate, then path validation against the trust root (which fails for
    /// anything but the root itself, after OpenSSL has looked at the whole certificate).
    static func x509(_ der: [UInt8]) -> FuzzOutcome {
        let certificate: Certificate
        do {
            certificate = try Certificate(der: der)
        } catch {
            return FuzzOutcome(.x509, .rejected(code: "decoding_failed"), detail: error.description)
        }
        _ = (certificate.subject, certificate.issuer, certificate.isValid(at: ASN1Time(verificationClock)))
        _ = try? certificate.pem()
        _ = try? certificate.publicKey.subjectPublicKeyInfoDER()
        _ = (certificate.hasExtension(ApplePayOID.leafMarker), certificate.hasExtension(ApplePayOID.intermediateMarker))
        var detail: [String] = []
        do {
            _ = try MerchantIdentity.merchantIdentifierHash(of: certificate)
        } catch {
            detail.append(error.description)
        }
        do {
            try CertificateChainVerifier.verify(
                leaf: certificate, intermediates: [], trustAnchors: [TrustRoot.appleRootCAG3.certificate], at: nil)
        } catch {
            detail.append(error.description)
        }
        return FuzzOutcome(.x509, .accepted, detail: detail.joined(separator: "; "))
    }
}
