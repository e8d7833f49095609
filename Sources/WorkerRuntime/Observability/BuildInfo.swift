import CBuildInfo

/// Which PayPipe a binary is: its release version and, when it was built from a git checkout, the commit (CBuildInfo
/// embeds git's HEAD and refs at compile time; a build outside git, such as the Docker image's, has none).
/// `paypipe --version`, `paypipe-<worker> --version` and every worker's `paypipe_build_info` gauge report it.
public struct BuildInfo: Sendable, Equatable {
    /// The release version, raised with each release.
    public static let releaseVersion = "0.1.0"
    public static let metricName = "paypipe_build_info"

    public let version: String
    /// The full commit id, nil when not built from git (or when HEAD moved to a branch the manifest did not resolve).
    public let commit: String?

    public init(version: String, commit: String?) {
        self.version = version
        self.commit = commit
    }

    public static let current = BuildInfo(
        version: releaseVersion,
        commit: commit(head: String(cString: paypipe_build_git_head()), refName: String(cString: paypipe_build_git_ref_name()),
                       looseRef: String(cString: paypipe_build_git_loose_ref()), packedRefs: String(cString: paypipe_build_git_packed_refs())))

    /// `paypipe 0.1.0 (commit 0123…)`, or `paypipe 0.1.0` without a commit.
    public func versionLine(program: String) -> String {
        commit.map { "\(program) \(version) (commit \($0))" } ?? "\(program) \(version)"
    }

    /// Registers `paypipe_build_info{version,commit}` with the value 1 (`commit="unknown"` outside git), so a dashboard
    /// joins any series to the build that produced it.
    public func register(in registry: MetricsRegistry) {
        registry.register(Self.metricName, kind: .gauge, help: "Always 1; labelled with the version and git commit the process was built from.")
        registry.set(Self.metricName, labels: ["version": version, "commit": commit ?? "unknown"], to: 1)
    }

    /// The commit git's files name. A detached HEAD holds the id itself; a HEAD on a branch (`ref: refs/heads/x`) is
    /// looked up in the branch's loose ref file, if it is the ref the build resolved (`refName`), else in packed-refs.
    static func commit(head: String, refName: String, looseRef: String, packedRefs: String) -> String? {
        let head = head.trimmingWhitespace
        if isObjectId(head) { return head }
        guard head.hasPrefix("ref: ") else { return nil }
        let ref = String(head.dropFirst("ref: ".count)).trimmingWhitespace
        if ref == refName, isObjectId(looseRef.trimmingWhitespace) { return looseRef.trimmingWhitespace }
        for line in packedRefs.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("^") {
            let fields = line.split(separator: " ", maxSplits: 1)
            if fields.count == 2, fields[1].trimmingWhitespace == ref, isObjectId(String(fields[0])) { return String(fields[0]) }
        }
        return nil
    }

    /// 40 (SHA-1) or 64 (SHA-256) lower-case hex digits.
    static func isObjectId(_ text: String) -> Bool {
        (text.count == 40 || text.count == 64) && text.allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
    }
}

private extension StringProtocol {
    var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
