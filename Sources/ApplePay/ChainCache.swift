import Crypto
import Foundation
import Synchronization

/// Bounded, thread-safe memo of certificate-chain verdicts.
///
/// Keyed by the exact bytes of the token's encoded certificate set and signer id, so a token from a known Apple leaf
/// skips X.509 parsing and the P-384 root signature check entirely. The key is compared byte for byte rather than
/// hashed: hashing a ~2 KB certificate set cost ~3% of a token, while comparing it against the handful of cached sets
/// is a `memcmp` and is exact (no reliance on a digest's collision resistance). Rejections are remembered too (they
/// do not depend on time either), so a flood of tokens with a bad chain costs no more than good ones. When full the
/// cache is simply emptied: Apple uses a handful of leaves at a time, so eviction policy does not matter.
final class ChainCache: Sendable {
    private let entries: Mutex<[Entry]>
    private let capacity: Int

    /// One remembered verdict with the bytes it was computed from.
    private struct Entry: Sendable {
        let certificates: [UInt8]
        let issuerNameDER: [UInt8]
        let serialNumber: [UInt8]
        let result: Result<VerifiedChain, ApplePayError>

        func matches(_ cms: CMSSignedData) -> Bool {
            Self.equal(certificates, cms.certificatesEncoding) && Self.equal(issuerNameDER, cms.signer.issuerNameDER)
                && Self.equal(serialNumber, cms.signer.serialNumber)
        }

        /// Length check first, then one `memcmp` (`elementsEqual` compares element by element through the generic
        /// iterator protocol).
        private static func equal(_ stored: [UInt8], _ candidate: ArraySlice<UInt8>) -> Bool {
            guard stored.count == candidate.count else { return false }
            return stored.withUnsafeBytes { a in
                candidate.withUnsafeBytes { b in a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
            }
        }
    }

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
        self.entries = Mutex([])
    }

    func chain(for cms: CMSSignedData, trustRoot: TrustRoot) throws(ApplePayError) -> VerifiedChain {
        if let cached = entries.withLock({ entries in entries.first(where: { $0.matches(cms) })?.result }) {
            return try cached.get()
        }
        // Evaluate outside the lock: two threads may race on the same new chain, which only costs duplicate work.
        let result: Result<VerifiedChain, ApplePayError>
        do {
            result = .success(try VerifiedChain.evaluate(cms, trustRoot: trustRoot))
        } catch {
            result = .failure(error)
        }
        let entry = Entry(
            certificates: Array(cms.certificatesEncoding), issuerNameDER: Array(cms.signer.issuerNameDER),
            serialNumber: Array(cms.signer.serialNumber), result: result)
        entries.withLock { entries in
            guard !entries.contains(where: { $0.matches(cms) }) else { return }
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries.append(entry)
        }
        return try result.get()
    }

    var count: Int { entries.withLock { $0.count } }
}
