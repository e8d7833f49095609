import ApplePay
import Crypto
import Foundation
import Testing

/// Minted signatures must be ordinary CMS: `openssl cms -verify` (an independent implementation) accepts them.
@Suite struct OpenSSLCrossCheckTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")), arguments: ApplePayToken.Version.allCases)
    func opensslVerifiesMintedSignatures(version: ApplePayToken.Version) throws {
        let pki = SandboxFixture.pki
        var request = SandboxFixture.request(version)
        request.applicationData = Array("cross-check".utf8)
        let token = try ApplePayToken.parse(pki.mintToken(request))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-cms-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let signature = directory.appendingPathComponent("sig.der"), content = directory.appendingPathComponent("content.bin")
        let root = directory.appendingPathComponent("root.pem")
        try Data(token.signature).write(to: signature)
        try Data(token.signedBytes).write(to: content)
        try Data(pki.root.certificate.pem().utf8).write(to: root)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["cms", "-verify", "-inform", "DER", "-in", signature.path, "-binary", "-content", content.path,
                             "-CAfile", root.path, "-purpose", "any", "-out", "/dev/null"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
