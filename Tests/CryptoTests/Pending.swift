import Testing
import Crypto
@Test func debugPoint() throws {
    let key = try PrivateKey.generateP256()
    let spki = try key.publicKey.subjectPublicKeyInfoDER()
    do { _ = try PublicKey(p256UncompressedPoint: spki.suffix(65)) } catch { Issue.record("\(error)") }
}
