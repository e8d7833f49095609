import Foundation
import PayPipeDevTools

/// Throw-away PKI for mutual-TLS tests, made with the openssl CLI: a CA, a server certificate for 127.0.0.1 and a client
/// certificate, both issued by the CA, plus a client certificate from an unrelated CA (refused by the server).
struct MutualTLSFiles {
    let directory: URL
    var server: MutualTLSServer.Files { .init(certificate: path("server.pem"), key: path("server.key"), clientCA: path("ca.pem")) }
    var caCertificate: String { path("ca.pem") }
    var clientCertificate: String { path("client.pem") }
    var clientKey: String { path("client.key") }
    var strangerCertificate: String { path("stranger.pem") }
    var strangerKey: String { path("stranger.key") }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-mtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try run(["req", "-x509"] + ec + ["-days", "1", "-subj", "/CN=paypipe-test-ca", "-keyout", path("ca.key"), "-out", path("ca.pem")])
        try run(["req", "-x509"] + ec + ["-days", "1", "-subj", "/CN=stranger-ca", "-keyout", path("stranger-ca.key"), "-out", path("stranger-ca.pem")])
        try issue("server", subject: "/CN=127.0.0.1", ca: "ca", extensions: "subjectAltName=IP:127.0.0.1")
        try issue("client", subject: "/UID=merchant.com.example/CN=Merchant ID: merchant.com.example", ca: "ca", extensions: "extendedKeyUsage=clientAuth")
        try issue("stranger", subject: "/CN=stranger", ca: "stranger-ca", extensions: "extendedKeyUsage=clientAuth")
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// A further client certificate of the CA, for Apple merchant id `uid` (its subject UID, as Apple's identity
    /// certificates carry it): the paths of the certificate and key.
    func client(uid: String) throws -> (certificate: String, key: String) {
        try issue("client-\(uid)", subject: "/UID=\(uid)/CN=Merchant ID: \(uid)", ca: "ca", extensions: "extendedKeyUsage=clientAuth")
        return (path("client-\(uid).pem"), path("client-\(uid).key"))
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    private func issue(_ name: String, subject: String, ca: String, extensions: String) throws {
        try run(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", subject,
                 "-keyout", path("\(name).key"), "-out", path("\(name).csr")])
        let extensionsFile = path("\(name).ext")
        try Data((extensions + "\n").utf8).write(to: URL(fileURLWithPath: extensionsFile))
        try run(["x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(ca).pem"), "-CAkey", path("\(ca).key"),
                 "-CAcreateserial", "-days", "1", "-extfile", extensionsFile, "-out", path("\(name).pem")])
    }

    private func run(_ arguments: [String]) throws {
        let status = try ChildProcess.run("/usr/bin/openssl", arguments)
        guard status == 0 else { throw TestFailure("openssl \(arguments.prefix(2).joined(separator: " ")) exited \(status)") }
    }
}
