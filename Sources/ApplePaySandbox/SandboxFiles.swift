import Foundation

/// File helpers of the sandbox PKI: private keys are written 0600.
enum SandboxFiles {
    static func read(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw SandboxPKIError.fileSystem("cannot read \(path)") }
        return String(decoding: data, as: UTF8.self)
    }

    static func write(_ text: String, to path: String, secret: Bool) throws {
        let attributes: [FileAttributeKey: Any] = [.posixPermissions: secret ? 0o600 : 0o644]
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: attributes) else {
            throw SandboxPKIError.fileSystem("cannot write \(path)")
        }
    }

    static func makeDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw SandboxPKIError.fileSystem("cannot create \(path)")
        }
    }
}
