/// A configuration variable that is missing or cannot be used. The message names the variable so an
/// operator can fix the deployment without reading code; values of secret-bearing variables are not echoed.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    public let variable: String
    public let problem: String

    public init(variable: String, problem: String) {
        self.variable = variable
        self.problem = problem
    }

    public var description: String { "invalid configuration \(variable): \(problem)" }
}
