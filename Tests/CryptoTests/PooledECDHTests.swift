import Crypto
import Foundation
import Testing

/// `PrivateKey.sharedSecret(withP256UncompressedPoint:)` reuses one peer key per pooled context: it must give the
/// same secrets as a fresh `PublicKey`, and a rejected point must not poison later calls.
@Suite struct PooledECDHTests {
    private static func point(_ key: PrivateKey) throws -> ArraySlice<UInt8> {
        try key.publicKey.subjectPublicKeyInfoDER().suffix(65)
    }

    @Test func matchesTheFreshKeyPathAcrossManyPeers() throws {
        let merchant = try PrivateKey.generateP256()
        for _ in 0..<50 {
            let peer = try PrivateKey.generateP256()
            let pooled = try merchant.sharedSecret(withP256UncompressedPoint: Self.point(peer))
            #expect(pooled.count == 32)
            #expect(pooled == (try merchant.sharedSecret(with: PublicKey(p256UncompressedPoint: Self.point(peer)))))
            #expect(pooled == (try peer.sharedSecret(with: merchant.publicKey)))
        }
    }

    @Test func rejectedPointsThrowDecodingFailedAndLaterCallsStillWork() throws {
        let merchant = try PrivateKey.generateP256()
        let good = try PrivateKey.generateP256()
        let expected = try good.sharedSecret(with: merchant.publicKey)
        #expect(try merchant.sharedSecret(withP256UncompressedPoint: Self.point(good)) == expected)
        var offCurve = Array(try Self.point(good))
        offCurve[64] ^= 0x01
        var compressed = Array(try Self.point(good))
        compressed[0] = 0x02
        let bads: [ArraySlice<UInt8>] = [offCurve[...], compressed[...], try Self.point(good).dropLast(), ArraySlice(repeating: 0, count: 65)]
        for bad in bads {
            do {
                _ = try merchant.sharedSecret(withP256UncompressedPoint: bad)
                Issue.record("an invalid point was accepted")
            } catch {
                guard case CryptoError.decodingFailed = error else {
                    Issue.record("expected decodingFailed, got \(error)")
                    continue
                }
            }
            // The pooled peer must not keep the previous (good) point after a failed load.
            #expect(try merchant.sharedSecret(withP256UncompressedPoint: Self.point(good)) == expected)
        }
        // A point that is valid but different yields a different secret (the peer really is replaced).
        let other = try PrivateKey.generateP256()
        #expect(try merchant.sharedSecret(withP256UncompressedPoint: Self.point(other)) != expected)
    }

    @Test func concurrentCallersGetTheirOwnSecrets() async throws {
        let merchant = try PrivateKey.generateP256()
        let peers = try (0..<16).map { _ in try PrivateKey.generateP256() }
        let expected = try peers.map { try $0.sharedSecret(with: merchant.publicKey) }
        let points = try peers.map(Self.point)
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var bad = 0
                    for round in 0..<100 {
                        let index = (worker * 7 + round) % points.count
                        if (try? merchant.sharedSecret(withP256UncompressedPoint: points[index])) != expected[index] { bad += 1 }
                    }
                    return bad
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    @Test func onlyP256KeysAreAccepted() throws {
        let rsa = try PrivateKey.generateRSA(bits: 1024)
        let point = try Self.point(PrivateKey.generateP256())
        #expect(throws: CryptoError.self) { try rsa.sharedSecret(withP256UncompressedPoint: point) }
    }
}
