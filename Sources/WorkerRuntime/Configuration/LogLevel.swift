/// `PAYPIPE_LOG_LEVEL`. Ordered so a logger can compare a line's level with its threshold.
public enum LogLevel: String, Sendable, CaseIterable, Comparable {
    case debug
    case info
    case warning
    case error

    private var rank: Int { Self.allCases.firstIndex(of: self)! }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }
}
