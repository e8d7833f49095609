import CPayPipeShim
#if canImport(Glibc)
import Glibc
#endif

/// What a worker does to its own process before it touches a key or a card: no core dumps. Decrypted card data,
/// the data key and merchant private keys live in worker memory, and a core file (or a ptrace attach) would copy
/// them to disk or to another process. `RLIMIT_CORE` 0 stops the kernel writing a core file; `PR_SET_DUMPABLE` 0
/// also covers a core pattern that pipes to a helper (which ignores the limit) and makes `/proc/<pid>/mem` and
/// `environ` root-only.
public enum ProcessHardening {
    /// Applies both; returns the failures (empty when both held), for the start-up log.
    @discardableResult
    public static func disableCoreDumps() -> [String] {
        var failures: [String] = []
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        if setrlimit(Int32(RLIMIT_CORE.rawValue), &limit) != 0 { failures.append("setrlimit(RLIMIT_CORE, 0): errno \(errno)") }
        if paypipe_prctl_set_dumpable(0) != 0 { failures.append("prctl(PR_SET_DUMPABLE, 0): errno \(errno)") }
        return failures
    }

    /// Whether the process is currently dumpable and its core limit (for tests and health diagnostics).
    public static var state: (dumpable: Bool, coreLimit: UInt64) {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_CORE.rawValue), &limit)
        return (paypipe_prctl_get_dumpable() != 0, UInt64(limit.rlim_cur))
    }
}
