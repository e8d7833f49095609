import Foundation

/// The key order of `JSONSerialization`'s `.sortedKeys`: Foundation's `compare(_:options: [.numeric, .caseInsensitive,
/// .forcedOrdering], locale: .system)`, which the job content hash must keep (``PaymentJob``).
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
