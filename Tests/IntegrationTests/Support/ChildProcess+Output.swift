import Foundation

extension ChildProcess {
    /// What a finished program printed, stdout and stderr interleaved (both go to one `logPath` file).
    struct Output {
        let status: Int32
        let text: String
    }

    /// Runs to completion, capturing the output through a temporary `logPath` file (no pipes: a full pipe would
    /// block the child while we wait for it).
    static func runCapturingOutput(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Output {
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let status = try spawn(path, arguments, environment: environment, logPath: logPath).wait()
        let text = FileManager.default.contents(atPath: logPath).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return Output(status: status, text: text)
    }
}
