import WorkerRuntime

/// Stage names for the runtime's tests: the runtime takes any (the payment side's are its `Stage` enum's).
extension StageName {
    static let decrypt = StageName("decrypt")
    static let submit = StageName("submit")
    static let notify = StageName("notify")
}
