import Foundation
import HTTP

/// `openssl s_server -www` on 127.0.0.1 with a throw-away self-signed certificate (SAN IP:127.0.0.1), for
/// exercising certificate verification and CURLOPT_CAINFO against a private CA.
final class TLSTestServer {
    let port: UInt16
    let certificatePath: String
    private let directory: URL
    private let process = Process()

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        certificatePath = directory.appendingPathComponent("cert.pem").path
        let keyPath = directory.appendingPathComponent("key.pem").path
        try Self.run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-subj", "/CN=paypipe-test", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", keyPath, "-out", certificatePath,
        ])
        port = try Self.freePort()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-www", "-quiet", "-accept", "127.0.0.1:\(port)", "-cert", certificatePath, "-key", keyPath]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitUntilListening()
    }

    /// SIGKILL, not `terminate()`: a child spawned from a test worker thread inherits that thread's blocked signal
    /// mask, so s_server never sees SIGTERM.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    private func waitUntilListening() throws {
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 0.2, totalTimeout: 0.5, verifyPeer: false))
        for _ in 0..<50 {
            if (try? client.send(HTTPRequest(url: "https://127.0.0.1:\(port)/"))) != nil { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw POSIXError(.ETIMEDOUT)
    }

    /// A port that was free a moment ago (bind an HTTPServer to port 0, read it, stop).
    private static func freePort() throws -> UInt16 {
        let probe = HTTPServer(host: "127.0.0.1", port: 0) { _ in .text("") }
        try probe.start()
        defer { probe.stop() }
        return probe.boundPort
    }

    private static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw POSIXError(.EINVAL) }
    }
}
