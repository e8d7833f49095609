import Testing
@testable import WorkerRuntime

/// The commit read from git's files as CBuildInfo embeds them, and the `paypipe_build_info` gauge.
@Suite struct BuildInfoTests {
    static let commit = "42a03856f955deecdbd53b68a0f03f0948426485"
    static let other = "ab3d25c0000000000000000000000000000000ff"

    @Test func aDetachedHeadIsTheCommit() {
        #expect(BuildInfo.commit(head: Self.commit + "\n", refName: "", looseRef: "", packedRefs: "") == Self.commit)
    }

    @Test func aBranchIsReadFromItsLooseRef() {
        #expect(BuildInfo.commit(head: "ref: refs/heads/main\n", refName: "refs/heads/main", looseRef: Self.commit + "\n", packedRefs: "") == Self.commit)
    }

    /// After `git gc` the branch is only in packed-refs; a HEAD on another branch than the build resolved (the
    /// manifest is cached) must not take that branch's loose ref.
    @Test func packedRefsAndAnotherBranch() {
        let packed = "# pack-refs with: peeled fully-peeled sorted\n\(Self.other) refs/heads/feature\n\(Self.commit) refs/heads/main\n^\(Self.other)\n"
        #expect(BuildInfo.commit(head: "ref: refs/heads/main", refName: "refs/heads/main", looseRef: "", packedRefs: packed) == Self.commit)
        #expect(BuildInfo.commit(head: "ref: refs/heads/feature", refName: "refs/heads/main", looseRef: Self.commit, packedRefs: packed) == Self.other)
        #expect(BuildInfo.commit(head: "ref: refs/heads/new", refName: "refs/heads/main", looseRef: Self.commit, packedRefs: packed) == nil)
    }

    @Test func outsideGitThereIsNoCommit() {
        #expect(BuildInfo.commit(head: "", refName: "", looseRef: "", packedRefs: "") == nil)
        #expect(BuildInfo(version: "0.1.0", commit: nil).versionLine(program: "paypipe") == "paypipe 0.1.0")
        #expect(BuildInfo(version: "0.1.0", commit: Self.commit).versionLine(program: "paypipe-notify") == "paypipe-notify 0.1.0 (commit \(Self.commit))")
    }

    /// Every worker's registry carries the gauge (StageMetrics registers it), with the value 1.
    @Test func everyWorkerExposesTheBuildInfoGauge() {
        let registry = MetricsRegistry()
        _ = StageMetrics(registry: registry, stage: .decrypt)
        let current = BuildInfo.current
        #expect(registry.render().contains(
            "paypipe_build_info{commit=\"\(current.commit ?? "unknown")\",version=\"\(BuildInfo.releaseVersion)\"} 1"), "\(registry.render())")
    }
}
