import Foundation

/// Start-up checks that secret files (data key, merchant private keys) are private to their owner.
/// Enforced outside sandbox only: developers' checkouts and compose volumes rarely get modes right.
public enum FilePermissions {
    public static func requirePrivate(_ path: String, variable: String) throws(ConfigurationError) {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let mode = (attributes[.posixPermissions] as? NSNumber)?.uint16Value else {
            throw ConfigurationError(variable: variable, problem: "cannot read \(path)")
        }
        guard mode & 0o077 == 0 else {
            throw ConfigurationError(
                variable: variable,
                problem: "\(path) has mode \(String(mode, radix: 8)); secret files must not be accessible by group or others (chmod 600)")
        }
    }
}
