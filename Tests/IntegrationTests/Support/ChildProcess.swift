import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starts programs for tests with `posix_spawn` + `waitpid`.
///
/// Foundation's `Process` is avoided here: started from a Swift Testing thread its `waitUntilExit` was
/// seen to hang on Linux, and children inherit the test thread's blocked signals (so SIGTERM would never
/// arrive). This resets the child's signal mask and dispositions explicitly.
struct ChildProcess {
    let pid: pid_t

    /// Spawns `path` with `arguments` and extra environment, stdout/stderr to `/dev/null` unless `logPath`.
    static func spawn(_ path: String, _ arguments: [String], environment: [String: String] = [:], logPath: String? = nil) throws -> ChildProcess {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let output = logPath ?? "/dev/null"
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else { throw TestFailure("posix_spawn \(path) failed: \(result)") }
        return ChildProcess(pid: pid)
    }

    /// Runs to completion and returns the exit status.
    static func run(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Int32 {
        try spawn(path, arguments, environment: environment).wait()
    }

    func signal(_ number: Int32) {
        kill(pid, number)
    }

    /// Whether the process is still running (it has not exited, so it is the same process that was started).
    /// Reaps it if it has exited, so ask once per check.
    var isRunning: Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// The exit status, or `nil` if the process is still running after `timeout` seconds (it is left running).
    func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while Date() < deadline {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return Self.exitStatus(status) }
            if result < 0 { return nil }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return nil
    }

    /// Waits for exit; returns the exit status, or 128 + signal number if killed.
    @discardableResult
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return Self.exitStatus(status)
    }

    private static func exitStatus(_ status: Int32) -> Int32 {
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return 128 + (status & 0x7f)
    }
}
