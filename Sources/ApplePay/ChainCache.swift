import Crypto
import Synchronization

/// Bounded, thread-safe memo of certificate-chain verdicts.
///
/// Keyed by SHA-256 over the token's encoded certificate set and signer id, so a token from a known Apple leaf
/// skips X.509 parsing and the P-384 root signature check entirely. Rejections are remembered too (they do not
/// depend on time either), so a flood of tokens with a bad chain costs no more than good ones. When full the cache is
/// simply emptied: Apple uses a handful of leaves at a time, so eviction policy does not matter.
final class ChainCache: Sendable {
    private let entries: Mutex<[[UInt8]: Result<VerifiedChain, ApplePayError>]>
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
        self.entries = Mutex([:])
    }

    func chain(for cms: CMSSignedData, trustRoot: TrustRoot) throws(ApplePayError) -> VerifiedChain {
        let key = SHA256.hash(parts: [cms.certificatesEncoding, cms.signer.issuerNameDER, cms.signer.serialNumber])
        if let cached = entries.withLock({ $0[key] }) {
            return try cached.get()
        }
        // Evaluate outside the lock: two threads may race on the same new chain, which only costs duplicate work.
        let result: Result<VerifiedChain, ApplePayError>
        do {
            result = .success(try VerifiedChain.evaluate(cms, trustRoot: trustRoot))
        } catch {
            result = .failure(error)
        }
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = result
        }
        return try result.get()
    }

    var count: Int { entries.withLock { $0.count } }
}
