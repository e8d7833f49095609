import Foundation
import Testing
@testable import Pipeline

/// Secret files outside sandbox: the mode/owner rule on real temporary files, and the data keyring refusing
/// a readable key file with an error naming the variable, the file, its mode and the fix.
@Suite struct FilePermissionsTests {
    /// A temporary directory removed with the value.
    final class Scratch {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perm-\(UUID())")
        init() throws { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: directory) }

        func file(_ name: String, _ text: String, mode: Int) throws -> String {
            let path = directory.appendingPathComponent(name).path
            guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]) else {
                throw ConfigurationError(variable: "test", problem: "cannot create \(path)")
            }
            // createFile applies the umask; set the mode exactly.
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }
    }

    static let key = Data((0..<32).map { UInt8($0) }).base64EncodedString()
    static let otherKey = Data((0..<32).map { UInt8(255 - $0) }).base64EncodedString()

    @Test(arguments: [0o600, 0o400])
    func privateFilesPass(mode: Int) throws {
        let scratch = try Scratch()
        try FilePermissions.requirePrivate(try scratch.file("key", "x", mode: mode), variable: "V")
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o666, 0o620])
    func groupOrWorldAccessIsRefused(mode: Int) throws {
        let scratch = try Scratch()
        let path = try scratch.file("key", "x", mode: mode)
        let error = #expect(throws: ConfigurationError.self) { try FilePermissions.requirePrivate(path, variable: "PAYPIPE_DATA_KEY_FILE") }
        #expect(error?.variable == "PAYPIPE_DATA_KEY_FILE")
        #expect(error?.problem.contains(path) == true)
        #expect(error?.problem.contains(String(format: "%04o", mode)) == true)
        #expect(error?.problem.contains("chmod 600 \(path)") == true)
    }

    @Test func missingFileIsNamed() {
        let error = #expect(throws: ConfigurationError.self) { try FilePermissions.requirePrivate("/nonexistent/key", variable: "V") }
        #expect(error?.problem.contains("/nonexistent/key") == true)
    }

    /// Ownership, with the process user injected (no chown needed, so it also runs as non-root).
    @Test func ownerRule() throws {
        let me: UInt32 = 1000
        try FilePermissions.check(.init(mode: 0o600, owner: me), path: "/k", variable: "V", processUser: me)
        // Root-owned and group-readable: a Kubernetes secret volume with fsGroup.
        try FilePermissions.check(.init(mode: 0o440, owner: 0), path: "/k", variable: "V", processUser: me)
        try FilePermissions.check(.init(mode: 0o640, owner: 0), path: "/k", variable: "V", processUser: me)
        #expect(throws: ConfigurationError.self) { try FilePermissions.check(.init(mode: 0o644, owner: 0), path: "/k", variable: "V", processUser: me) }
        #expect(throws: ConfigurationError.self) { try FilePermissions.check(.init(mode: 0o660, owner: 0), path: "/k", variable: "V", processUser: me) }
        let foreign = #expect(throws: ConfigurationError.self) {
            try FilePermissions.check(.init(mode: 0o600, owner: 1001), path: "/k", variable: "V", processUser: me)
        }
        #expect(foreign?.problem.contains("owned by uid 1001") == true)
        #expect(foreign?.problem.contains("chown 1000 /k && chmod 600 /k") == true)
        // Running as root, a root-owned file must be 0600 too: the group exception is for non-root services.
        #expect(throws: ConfigurationError.self) { try FilePermissions.check(.init(mode: 0o640, owner: 0), path: "/k", variable: "V", processUser: 0) }
    }

    @Test func dataKeyFileIsCheckedOutsideSandboxOnly() throws {
        let scratch = try Scratch()
        let readable = try scratch.file("data.key", Self.key, mode: 0o644)
        let environment = EnvironmentReader(["PAYPIPE_DATA_KEY_FILE": readable])
        let error = #expect(throws: ConfigurationError.self) { try DataKeyring.load(environment, deployment: .production) }
        #expect(error?.variable == "PAYPIPE_DATA_KEY_FILE")
        #expect(error?.description.contains("chmod 600") == true)
        #expect(error?.description.contains(Self.key) == false, "never the key")
        #expect(try DataKeyring.load(environment, deployment: .sandbox).current.id.count == 16)
        let privateFile = try scratch.file("private.key", Self.key, mode: 0o600)
        #expect(try DataKeyring.load(EnvironmentReader(["PAYPIPE_DATA_KEY_FILE": privateFile]), deployment: .production).previous.isEmpty)
    }

    @Test func previousKeysFromAFileAreCheckedAndRead() throws {
        let scratch = try Scratch()
        let previous = try scratch.file("previous.keys", "\(Self.otherKey)\n\n", mode: 0o644)
        let environment = EnvironmentReader(["PAYPIPE_DATA_KEY": Self.key, "PAYPIPE_DATA_KEY_PREVIOUS_FILE": previous])
        let error = #expect(throws: ConfigurationError.self) { try DataKeyring.load(environment, deployment: .production) }
        #expect(error?.variable == "PAYPIPE_DATA_KEY_PREVIOUS_FILE")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: previous)
        let third = Data(repeating: 7, count: 32).base64EncodedString()
        let keyring = try DataKeyring.load(
            EnvironmentReader(["PAYPIPE_DATA_KEY": Self.key, "PAYPIPE_DATA_KEY_PREVIOUS": third, "PAYPIPE_DATA_KEY_PREVIOUS_FILE": previous]),
            deployment: .production)
        #expect(keyring.previous.count == 2)
        #expect(keyring.key(id: try DataKey(bytes: Array(Data(base64Encoded: Self.otherKey)!)).id) != nil)
    }
}
