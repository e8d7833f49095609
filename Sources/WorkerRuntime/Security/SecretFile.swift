import Foundation

/// Reads a file holding a secret (data key, private key), first checking outside sandbox that it is private to
/// this process's user (``FilePermissions``). The one place secret files are read, so no path skips the check.
public enum SecretFile {
    /// Whether `deployment` requires secret files to be private. Only sandbox relaxes it.
    public static func enforcesPermissions(_ deployment: DeploymentEnvironment) -> Bool {
        deployment != .sandbox
    }

    /// The file's text. Errors name `variable` (the setting that pointed at the file) and never the contents.
    public static func read(_ path: String, variable: String, deployment: DeploymentEnvironment) throws(ConfigurationError) -> String {
        try requirePrivate(path, variable: variable, deployment: deployment)
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigurationError(variable: variable, problem: "cannot read \(path) as UTF-8 text")
        }
        return text
    }

    /// Only the permission check, for files another library opens itself (TLS client keys).
    public static func requirePrivate(_ path: String, variable: String, deployment: DeploymentEnvironment) throws(ConfigurationError) {
        guard enforcesPermissions(deployment) else { return }
        try FilePermissions.requirePrivate(path, variable: variable)
    }
}
