import Foundation
import JSON

/// The rules every job body on `paypipe.jobs` follows, payment and operation alike (``PaymentJob``,
/// ``OperationRequest``): a strict JSON object in UTF-8, identifiers that need no escaping, and the canonical bytes
/// its content hash is taken over.
enum JobBody {
    /// Identifiers (job and merchant ids) are 1-128 characters of `[A-Za-z0-9._:-]`: safe in logs,
    /// headers and URLs without escaping.
    static func isIdentifier(_ text: String) -> Bool {
        (1...128).contains(text.unicodeScalars.count) && text.unicodeScalars.allSatisfy {
            $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._:-".unicodeScalars.contains($0))
        }
    }

    /// Why a body names no job (the reason of its dead letter: nothing can be recorded against it): it is no strict
    /// JSON object, or it lacks its merchant or its own id.
    struct Unaddressed: Error {
        let reason: String
    }

    /// A job or operation body as a strict JSON object in UTF-8, and its address: the merchant and the body's own id
    /// under `idKey` (`jobId`, `operationId`), both identifiers (``isIdentifier(_:)``).
    static func addressed(_ body: [UInt8], idKey: String) throws(Unaddressed) -> (object: JSONValue, merchantId: String, id: String) {
        guard String(validating: body, as: UTF8.self) != nil else { throw Unaddressed(reason: "body is not valid UTF-8") }
        let object: JSONValue
        do {
            object = try JSONValue.parse(body)
        } catch {
            throw Unaddressed(reason: "body is not a JSON object: \(error)")
        }
        guard object.isObject else { throw Unaddressed(reason: "body is not a JSON object") }
        func identifier(_ key: String) throws(Unaddressed) -> String {
            guard let value = object[key]?.stringValue, isIdentifier(value) else {
                throw Unaddressed(reason: "\(key) is missing or not an identifier of 1-128 characters [A-Za-z0-9._:-]")
            }
            return value
        }
        return (object, try identifier("merchantId"), try identifier(idKey))
    }

    /// Objects' keys sorted recursively, compact, `/` unescaped: the bytes `JSONSerialization` writes with
    /// `[.sortedKeys, .withoutEscapingSlashes]` (which this replaced), so content hashes of jobs stored before stay
    /// valid. Its key order is Foundation's numeric, case-insensitive comparison (``FoundationKeyOrder``).
    static func canonicalJSON(_ value: JSONValue) -> [UInt8] {
        canonical(value).serialized()
    }

    private static func canonical(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            return .object(members.sorted { FoundationKeyOrder.areInIncreasingOrder($0.key, $1.key) }
                .map { (key: $0.key, value: canonical($0.value)) })
        case .array(let elements):
            return .array(elements.map(canonical))
        default:
            return value
        }
    }
}

/// The key order of `JSONSerialization`'s `.sortedKeys`: Foundation's `compare(_:options: [.numeric, .caseInsensitive,
/// .forcedOrdering], locale: .system)`, which the jobs' content hashes must keep (``JobBody/canonicalJSON(_:)``).
///
/// Why a fast path: that call goes through CFString and locale creation for every comparison, and sorting the keys
/// of each job and its token cost about 2% of the whole pipeline's CPU. Keys made only of ASCII letters — every key of
/// the job contract and of an Apple Pay token — order exactly like their lowercased bytes, unless they are equal
/// ignoring case (then `.forcedOrdering` decides). Those pairs, and keys with anything else (digits, where `.numeric`
/// applies, punctuation, non-ASCII), still go to Foundation; `PaymentJobTests` cross-checks the two.
enum FoundationKeyOrder {
    static func areInIncreasingOrder(_ a: String, _ b: String) -> Bool {
        if let ordered = asciiLetterOrder(a, b) { return ordered }
        return a.compare(b, options: [.numeric, .caseInsensitive, .forcedOrdering], range: a.startIndex..<a.endIndex,
                         locale: NSLocale.system) == .orderedAscending
    }

    /// The order of two keys of ASCII letters only, compared case-insensitively; `nil` when either key has another
    /// character or they are equal ignoring case.
    static func asciiLetterOrder(_ a: String, _ b: String) -> Bool? {
        guard a.utf8.allSatisfy(isASCIILetter), b.utf8.allSatisfy(isASCIILetter) else { return nil }
        var left = a.utf8.makeIterator(), right = b.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return nil
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?):
                let (lx, ly) = (x | 0x20, y | 0x20)  // ASCII letters: setting bit 5 lowercases
                if lx != ly { return lx < ly }
            }
        }
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }
}
