@testable import ApplePay
import Crypto
import Foundation
import Testing

/// The chain cache is keyed by the exact certificate bytes and signer id: any change to them must miss the cache
/// and be evaluated (and rejected) on its own, without disturbing the verdict for the original set.
@Suite struct ChainCacheTests {
    let pki = SandboxFixture.pki

    private func signature() throws -> [UInt8] {
        try ApplePayToken.parse(pki.mintToken(SandboxFixture.request())).signature
    }

    @Test func sameCertificatesHitTheCacheAndAnyByteChangeMisses() throws {
        let cache = ChainCache(capacity: 8)
        let original = try signature()
        let cms = try CMSSignedData.parse(original)
        _ = try cache.chain(for: cms, trustRoot: pki.trustRoot)
        // Another token from the same leaf (different signer info, same certificates): a hit.
        _ = try cache.chain(for: CMSSignedData.parse(signature()), trustRoot: pki.trustRoot)
        #expect(cache.count == 1)

        // Flip one bit inside the last certificate's signature: same DER structure, different bytes.
        var tampered = original
        tampered[cms.certificatesEncoding.endIndex - 8] ^= 0x01
        let tamperedCMS = try CMSSignedData.parse(tampered)
        for _ in 0..<2 {
            #expect(throws: ApplePayError.self) { try cache.chain(for: tamperedCMS, trustRoot: pki.trustRoot) }
        }
        #expect(cache.count == 2)  // the rejection is remembered once, next to the good verdict
        _ = try cache.chain(for: cms, trustRoot: pki.trustRoot)
        #expect(cache.count == 2)
    }

    @Test func fullCacheStartsOver() throws {
        let cache = ChainCache(capacity: 1)
        let original = try signature()
        let cms = try CMSSignedData.parse(original)
        var tampered = original
        tampered[cms.certificatesEncoding.endIndex - 8] ^= 0x01
        #expect(throws: ApplePayError.self) { try cache.chain(for: CMSSignedData.parse(tampered), trustRoot: pki.trustRoot) }
        _ = try cache.chain(for: cms, trustRoot: pki.trustRoot)
        #expect(cache.count == 1)
    }
}
