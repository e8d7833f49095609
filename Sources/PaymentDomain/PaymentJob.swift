import Crypto
import Foundation
import JSON

/// A payment job as backend teams publish it to `paypipe.jobs` / `payment.requested`
/// (contract: docs/asyncapi.yaml, docs/schemas/job.schema.json). Unknown fields are ignored.
public struct PaymentJob: Sendable, Equatable {
    public struct Amount: Sendable, Equatable {
        /// Integer minor units (pence, cents, yen).
        public let value: Int64
        public let currency: Currency
    }

    public let jobId: String
    public let merchantId: String
    public let orderReference: String
    public let amount: Amount
    /// The Apple Pay token in any accepted form, as canonical JSON bytes (a JSON string is unwrapped); empty for a
    /// TapPay job (``tapPayPrime``).
    public let applePayToken: [UInt8]
    /// A TapPay merchant's job: the prime TapPay's SDK gave the app (the Apple Pay token went to TapPay), in place of
    /// `applePayToken`. Exactly one of the two is present. The prime expires 90 s after it was obtained (docs/job-contract.md).
    public var tapPayPrime: String? = nil
    /// The W3C trace context of the job's handling by decrypt (`traceparent`, `tracestate`), which its payment's row
    /// keeps: set by the stage from the delivery, never read from the body.
    public var traceparent: String? = nil
    public var tracestate: String? = nil
    /// `"amountPending": true`: the final amount is set later, by a `payment.complete.requested` operation, and the
    /// job's `amount` is the most that completion may charge (its currency is the payment's). Only for a merchant whose
    /// connector declares the `deferredAmount` capability (decrypt fails others `amount_pending_not_supported`);
    /// docs/job-contract.md.
    public var amountPending = false
    /// `storeCredential.usage`: a customer-initiated payment (CIT) that asks to store its credential for later
    /// merchant-initiated payments (docs/recurring.md); nil: nothing is stored.
    public var storeCredential: CredentialUsage? = nil
    /// A merchant-initiated payment (MIT): `initiator` `merchant` with `credentialId` and `mitReason`, and no Apple Pay
    /// token or prime; nil for a customer-initiated one.
    public var merchantInitiated: MerchantInitiated? = nil

    /// What an MIT job names instead of a token.
    public struct MerchantInitiated: Sendable, Equatable {
        public let credentialId: String
        public let reason: MITReason

        public init(credentialId: String, reason: MITReason) {
            self.credentialId = credentialId
            self.reason = reason
        }
    }
    public let billingContact: [String: String]?
    public let shippingContact: [String: String]?
    public let notifyURL: String?
    public let metadata: [String: String]
    /// The exact bytes the app set in `PKPaymentRequest.applicationData` (the job's base64 `applicationData`), whose
    /// SHA-256 the token header must carry (decrypt, `application_data_mismatch`).
    public let applicationData: [UInt8]?
    /// `captureMode` (`automatic` or `manual`), overriding the merchant's `gateway.captureMode`; nil: the merchant's.
    public let captureMode: CaptureMode?
    /// `captureWithin` as given (an ISO 8601 duration, ``CapturePolicy``); only with `captureMode` `manual`.
    public let captureWithin: String?
    /// SHA-256 of the contract fields in canonical form: the same job id with another hash is an
    /// `idempotency_conflict`, while re-serialising the same job (key order, spacing) is not.
    public let contentHash: [UInt8]

    /// Why a job could not be used. `addressed` errors name a merchant and job id, so the payment can be
    /// recorded as failed and notified; `unaddressed` ones cannot be attributed and are dead-lettered.
    public enum DecodingError: Error, Equatable, CustomStringConvertible {
        case unaddressed(reason: String)
        case invalid(merchantId: String, jobId: String, contentHash: [UInt8], reason: String)

        public var description: String {
            switch self {
            case .unaddressed(let reason): "malformed job: \(reason)"
            case .invalid(_, let jobId, _, let reason): "invalid job \(jobId): \(reason)"
            }
        }
    }

    /// Parsed once with the strict ``JSON/JSONValue`` parser (Foundation's `JSONSerialization` cost half of the decrypt
    /// worker's CPU). Strictness changes one edge: a body with a duplicate key is malformed (it was last-wins).
    public static func decode(_ body: [UInt8]) throws(DecodingError) -> PaymentJob {
        let (object, merchantId, jobId): (JSONValue, String, String)
        do {
            (object, merchantId, jobId) = try JobBody.addressed(body, idKey: "jobId")
        } catch {
            throw .unaddressed(reason: error.reason)
        }
        let hash = contentHash(object)
        func invalid(_ reason: String) -> DecodingError {
            .invalid(merchantId: merchantId, jobId: jobId, contentHash: hash, reason: reason)
        }
        // Counted in Unicode scalars (as JSON Schema's maxLength and PostgreSQL count), not grapheme clusters: one
        // "character" of 200 combining marks must not pass as 1. Control characters (NUL above all, which a
        // PostgreSQL text column refuses) would otherwise fail the insert on every retry instead of failing the job.
        guard let orderReference = object["orderReference"]?.stringValue, (1...64).contains(orderReference.unicodeScalars.count),
              !Self.containsControlCharacter(orderReference) else {
            throw invalid("orderReference must be a string of 1-64 characters without control characters")
        }
        guard let amountObject = object["amount"], amountObject.isObject else {
            throw invalid("amount must be an object {value, currency}")
        }
        let value: Int64
        switch amountObject["value"] {
        case .integer(let integer)?: value = integer
        case .double(let double)? where double == double.rounded() && Int64(exactly: double) != nil: value = Int64(double)
        default: throw invalid("amount.value must be an integer number of minor units")
        }
        guard value > 0, value <= 99_999_999_999 else {
            throw invalid("amount.value must be between 1 and 99999999999 minor units")
        }
        guard let code = amountObject["currency"]?.stringValue, let currency = Currency.alpha3(code) else {
            throw invalid("amount.currency must be an ISO 4217 alpha-3 code")
        }
        let credentials = try credentialFields(object, invalid: invalid)
        let token: [UInt8]
        // `null` reads as absent, as for the other optional members.
        // `.none`, not `nil`: JSONValue is ExpressibleByNilLiteral, so a bare `nil` in this ternary was `.null`, and a
        // null prime counted as given (refusing `"tapPayPrime": null` next to an applePayToken).
        let prime = object["tapPayPrime"].flatMap { $0.isNull ? JSONValue?.none : $0 }
        switch object["applePayToken"] {
        case _ where credentials.merchantInitiated != nil:
            // An MIT pays with its stored credential: a token or prime next to it would be a second instrument.
            guard object["applePayToken"] == nil, prime == nil else {
                throw invalid("a merchant-initiated job (initiator \"merchant\") carries no applePayToken or tapPayPrime")
            }
            token = []
        case _ where prime != nil:
            guard object["applePayToken"] == nil else { throw invalid("give applePayToken or tapPayPrime, not both") }
            // String(71) [doc: TapPay "Pay by Prime API"]; printable ASCII, so it is safe in logs' redaction and headers.
            guard let text = prime?.stringValue, (1...71).contains(text.utf8.count), text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw invalid("tapPayPrime must be a string of 1-71 printable ASCII characters")
            }
            token = []
        case .string(let string)?:
            token = Array(string.utf8)
        case let tokenObject? where tokenObject.isObject:
            token = JobBody.canonicalJSON(tokenObject)
        default:
            throw invalid("applePayToken must be a token object or a JSON string of one")
        }
        let notifyURL = object["notifyUrl"]?.stringValue
        if object["notifyUrl"] != nil, notifyURL.map(Self.isWebURL) != true {
            throw invalid("notifyUrl must be an absolute http(s) URL with a host")
        }
        var metadata: [String: String] = [:]
        switch object["metadata"] {
        case nil, .null?: break
        // NUL cannot be stored in jsonb: refused here, as a failed job, rather than as a database error retried forever.
        case .object(let members)? where members.count <= 50
            && members.allSatisfy({ member in member.value.stringValue.map { !$0.contains("\0") && !member.key.contains("\0") } ?? false }):
            for member in members { metadata[member.key] = member.value.stringValue }
        default: throw invalid("metadata must be an object of at most 50 string values without NUL characters")
        }
        var applicationData: [UInt8]?
        switch object["applicationData"] {
        case nil, .null?: break
        case .string(let text)? where text.utf8.count <= 65_536:
            guard let bytes = Data(base64Encoded: text) else { throw invalid("applicationData must be standard padded base64") }
            applicationData = Array(bytes)
        default: throw invalid("applicationData must be a base64 string of at most 65536 characters")
        }
        var captureMode: CaptureMode?
        var captureWithin: String?
        switch (object["captureMode"], object["captureWithin"]) {
        case (nil, nil), (.null?, nil), (nil, .null?), (.null?, .null?): break
        case (let mode, let within):
            // Checked on its own terms here (the merchant's policy is applied over it when the payment is stored); a
            // captureWithin needs captureMode "manual" in the same job, so the job alone says it will be voided.
            let modeText = mode?.stringValue
            if mode != nil, mode != .null, modeText == nil { throw invalid("captureMode must be \"automatic\" or \"manual\"") }
            let withinText = within?.stringValue
            if within != nil, within != .null, withinText == nil { throw invalid("captureWithin must be an ISO 8601 duration string") }
            if withinText != nil, modeText != CaptureMode.manual.rawValue { throw invalid("captureWithin needs captureMode \"manual\" in the same job") }
            do {
                let policy = try CapturePolicy.automatic.overridden(mode: modeText, captureWithin: withinText)
                captureMode = modeText == nil ? nil : policy.mode
                captureWithin = withinText
            } catch {
                throw invalid(error.reason)
            }
        }
        var job = PaymentJob(
            jobId: jobId, merchantId: merchantId, orderReference: orderReference,
            amount: Amount(value: value, currency: currency), applePayToken: token,
            billingContact: contact(object["billingContact"]), shippingContact: contact(object["shippingContact"]),
            notifyURL: notifyURL, metadata: metadata, applicationData: applicationData, captureMode: captureMode,
            captureWithin: captureWithin, contentHash: hash)
        job.tapPayPrime = prime?.stringValue
        switch object["amountPending"] {
        case nil, .null?: break
        case .bool(let pending)?: job.amountPending = pending
        default: throw invalid("amountPending must be true or false")
        }
        job.storeCredential = credentials.store
        job.merchantInitiated = credentials.merchantInitiated
        return job
    }

    /// `storeCredential`, `initiator`, `credentialId` and `mitReason` (docs/recurring.md), strictly: unknown members
    /// and values are refused, and an MIT must name its credential and reason while a CIT names neither.
    static func credentialFields(
        _ object: JSONValue, invalid: (String) -> DecodingError
    ) throws(DecodingError) -> (store: CredentialUsage?, merchantInitiated: MerchantInitiated?) {
        func present(_ key: String) -> JSONValue? { object[key].flatMap { $0.isNull ? JSONValue?.none : $0 } }
        var store: CredentialUsage?
        if let value = present("storeCredential") {
            guard case .object(let members) = value, members.count == 1, members[0].key == "usage",
                  let usage = members[0].value.stringValue.flatMap(CredentialUsage.init(rawValue:)) else {
                throw invalid("storeCredential must be {\"usage\": \"recurring\" | \"unscheduled\" | \"installment\"} and nothing else")
            }
            store = usage
        }
        let initiator = present("initiator")
        guard initiator == nil || initiator?.stringValue == "customer" || initiator?.stringValue == "merchant" else {
            throw invalid("initiator must be \"customer\" or \"merchant\"")
        }
        let credentialId = present("credentialId"), reason = present("mitReason")
        guard initiator?.stringValue == "merchant" else {
            guard credentialId == nil, reason == nil else {
                throw invalid("credentialId and mitReason belong to a merchant-initiated job: add \"initiator\": \"merchant\"")
            }
            return (store, nil)
        }
        guard store == nil else { throw invalid("a merchant-initiated job cannot store a credential (storeCredential belongs to the customer's first payment)") }
        guard let id = credentialId?.stringValue, CredentialID.isValid(id) else {
            throw invalid("credentialId must be a credential id (cred_ and 24 lowercase hex digits)")
        }
        guard let mitReason = reason?.stringValue.flatMap(MITReason.init(rawValue:)) else {
            throw invalid("mitReason must be one of \(MITReason.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return (nil, MerchantInitiated(credentialId: id, reason: mitReason))
    }

    /// The contract fields, canonically serialised (sorted keys), hashed.
    static func contentHash(_ object: JSONValue) -> [UInt8] {
        // A field counts only when present, so adding an optional field to the contract leaves the hash of every job
        // that does not carry it unchanged (a redelivered job still matches its payment).
        let fields = ["jobId", "merchantId", "orderReference", "amount", "applePayToken",
                      "billingContact", "shippingContact", "notifyUrl", "metadata", "applicationData", "tapPayPrime",
                      "captureMode", "captureWithin", "amountPending", "storeCredential", "credentialId", "initiator", "mitReason"]
        let contract = fields.compactMap { field in object[field].map { (key: field, value: $0) } }
        return SHA256.hash(JobBody.canonicalJSON(.object(contract)))
    }

    /// PKContact-like objects flattened to strings (name parts, address lines, email, phone); other
    /// shapes are ignored rather than failing the payment, since contacts are optional enrichment.
    static func contact(_ value: JSONValue?) -> [String: String]? {
        guard case .object(let members)? = value else { return nil }
        var flat: [String: String] = [:]
        for (key, value) in members {
            switch value {
            case .string(let string): flat[key] = string
            case .array(let lines) where lines.allSatisfy({ $0.stringValue != nil }):
                flat[key] = lines.compactMap(\.stringValue).joined(separator: "\n")
            case .object(let nested):
                for (innerKey, inner) in nested { if let string = inner.stringValue { flat[innerKey] = string } }
            default: continue
            }
        }
        return flat.isEmpty ? nil : flat
    }

    /// C0 and C1 control characters (U+0000-U+001F, U+007F-U+009F).
    static func containsControlCharacter(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }

    /// `http(s)://host…`: a URL the notify stage can actually call (`http:x` or `http://` parse as URLs but name no host).
    static func isWebURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return url.host.map { !$0.isEmpty } ?? false
    }
}
