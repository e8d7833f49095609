import AMQP
import Postgres

/// `PAYPIPE_AMQP_PASSWORD_FILE` and `PAYPIPE_DATABASE_PASSWORD_FILE`: the connection passwords read from files (a
/// Kubernetes Secret volume, a Docker secret, a systemd credential), so the URLs themselves hold no secret and can sit
/// in plain configuration (a ConfigMap). Each file is a secret file (``SecretFile``): outside sandbox it must be
/// private to the worker's user, or owned by root and at most group-readable, or the worker refuses to start. Its
/// content is the password; trailing line breaks are ignored. The URL then names its user without a password
/// (`amqps://paypipe@rabbit/%2f`, `postgresql://paypipe@db/paypipe?…`); a URL with a password of its own is refused
/// rather than silently overridden. Unset, the URLs are used as they are.
public enum PasswordFiles {
    public static let amqpVariable = "PAYPIPE_AMQP_PASSWORD_FILE"
    public static let databaseVariable = "PAYPIPE_DATABASE_PASSWORD_FILE"

    /// `url` (`PAYPIPE_AMQP_URL`) with the password of `PAYPIPE_AMQP_PASSWORD_FILE` set, if that is set.
    public static func amqpURL(_ url: String, _ reader: EnvironmentReader, deployment: DeploymentEnvironment) throws(ConfigurationError) -> String {
        try resolve(url, urlVariable: "PAYPIPE_AMQP_URL", fileVariable: amqpVariable, reader, deployment) {
            try AMQPConfiguration.url($0, settingPassword: $1)
        }
    }

    /// `url` (`PAYPIPE_DATABASE_URL`) with the password of `PAYPIPE_DATABASE_PASSWORD_FILE` set, if that is set.
    public static func databaseURL(_ url: String, _ reader: EnvironmentReader, deployment: DeploymentEnvironment) throws(ConfigurationError) -> String {
        try resolve(url, urlVariable: "PAYPIPE_DATABASE_URL", fileVariable: databaseVariable, reader, deployment) {
            try PostgresConfiguration.url($0, settingPassword: $1)
        }
    }

    /// `url` with the password of the file `fileVariable` names set by `setting`; a URL that cannot take it is an
    /// error naming both variables.
    private static func resolve(
        _ url: String, urlVariable: String, fileVariable: String, _ reader: EnvironmentReader, _ deployment: DeploymentEnvironment,
        setting: (String, String) throws -> String
    ) throws(ConfigurationError) -> String {
        guard let path = reader.raw(fileVariable) else { return url }
        let password = try read(path, variable: fileVariable, deployment: deployment)
        do {
            return try setting(url, password)
        } catch {
            throw ConfigurationError(variable: urlVariable, problem: "with \(fileVariable): \(error)")
        }
    }

    /// The password in the file at `path`: its text without trailing line breaks, never empty. Errors name the
    /// variable and the path, never the content.
    static func read(_ path: String, variable: String, deployment: DeploymentEnvironment) throws(ConfigurationError) -> String {
        var text = Substring(try SecretFile.read(path, variable: variable, deployment: deployment))
        while let last = text.last, last.isNewline { text = text.dropLast() }
        guard !text.isEmpty else { throw ConfigurationError(variable: variable, problem: "\(path) is empty") }
        return String(text)
    }
}
