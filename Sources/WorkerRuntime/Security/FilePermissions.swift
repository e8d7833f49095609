import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Start-up checks that secret files (data keys, private keys, client TLS keys) are private to the process's user.
///
/// Enforced outside sandbox only: developers' checkouts and compose volumes rarely get modes right, whereas in
/// production a key readable by another account on the host is a key that has leaked.
///
/// The rule is libpq's for `sslkey`, so one mental model covers every secret file a worker reads:
/// - owned by the process's effective user: no permission bits for group or others (`chmod 600` or `400`);
/// - owned by root: the group may read (`0640`/`0440`), which is how Kubernetes secret volumes with an
///   `fsGroup` and systemd credentials hand a file to a non-root service; nothing for others;
/// - owned by anyone else: refused (that account can change the file, or its mode, under us).
///
/// `stat` follows symbolic links, so a Kubernetes secret (a symlink into `..data/`) is judged by its target.
public enum FilePermissions {
    /// What `stat` says about a file, as far as the rule above needs.
    public struct Status: Sendable, Equatable {
        public var mode: UInt32
        public var owner: UInt32

        public init(mode: UInt32, owner: UInt32) {
            self.mode = mode & 0o7777
            self.owner = owner
        }
    }

    /// Throws a ``ConfigurationError`` naming `variable`, the file, its mode and the fix, unless the file at `path`
    /// is private to `processUser` (default: this process's effective user id).
    public static func requirePrivate(_ path: String, variable: String, processUser: UInt32 = geteuid()) throws(ConfigurationError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw ConfigurationError(variable: variable, problem: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        try check(Status(mode: UInt32(info.st_mode), owner: UInt32(info.st_uid)), path: path, variable: variable, processUser: processUser)
    }

    /// The rule itself, on a given status (pure, so every branch is unit-testable without `chown`).
    public static func check(_ status: Status, path: String, variable: String, processUser: UInt32) throws(ConfigurationError) {
        let mode = String(format: "%04o", status.mode)
        if status.owner == processUser {
            guard status.mode & 0o077 == 0 else {
                throw ConfigurationError(
                    variable: variable,
                    problem: "\(path) has mode \(mode): a secret file must not be readable or writable by group or others; fix with `chmod 600 \(path)`")
            }
        } else if status.owner == 0 {
            guard status.mode & 0o037 == 0 else {
                throw ConfigurationError(
                    variable: variable,
                    problem: "\(path) (owned by root) has mode \(mode): only the owner may write and at most the group read; fix with `chmod 640 \(path)` (or `chown \(processUser) \(path) && chmod 600 \(path)`)")
            }
        } else {
            throw ConfigurationError(
                variable: variable,
                problem: "\(path) (mode \(mode)) is owned by uid \(status.owner), not by this process's user (uid \(processUser)) or root; fix with `chown \(processUser) \(path) && chmod 600 \(path)`")
        }
    }
}
