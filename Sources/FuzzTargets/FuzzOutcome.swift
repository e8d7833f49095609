/// What one fuzz input did: accepted, or rejected with a classified error code (the same stable codes the pipeline
/// records: `malformed_job`, `malformed_token`, `signature_invalid`, …).
///
/// A rejection is the expected result for almost every input. The one outcome that is a bug without crashing is
/// `oracleFailure`: a differential or round-trip check disagreed; the fuzz driver turns it into a crash.
public struct FuzzOutcome: Sendable, Equatable, CustomStringConvertible {
    public enum Verdict: Sendable, Equatable {
        case accepted
        case rejected(code: String)
        case oracleFailure(String)
    }

    public let surface: FuzzSurface
    public let verdict: Verdict
    /// The error's reason (never input bytes: PayPipe's error messages do not echo card data), for diagnostics.
    public let detail: String

    public init(_ surface: FuzzSurface, _ verdict: Verdict, detail: String = "") {
        self.surface = surface
        self.verdict = verdict
        self.detail = detail
    }

    /// `surface:accepted`, `surface:<code>` or `surface:oracle_failure`: the form of Tests/Fixtures/fuzz-regressions/expected.tsv.
    public var code: String {
        switch verdict {
        case .accepted: "\(surface):accepted"
        case .rejected(let code): "\(surface):\(code)"
        case .oracleFailure: "\(surface):oracle_failure"
        }
    }

    public var isOracleFailure: Bool {
        if case .oracleFailure = verdict { return true }
        return false
    }

    public var description: String { detail.isEmpty ? code : "\(code) (\(detail))" }
}
