/// Failures of the sandbox PKI (file IO or key/certificate generation).
public enum SandboxPKIError: Error, CustomStringConvertible, Sendable {
    case fileSystem(String)
    case crypto(String)

    public var description: String {
        switch self {
        case .fileSystem(let what): "sandbox PKI file error: \(what)"
        case .crypto(let what): "sandbox PKI crypto error: \(what)"
        }
    }
}
