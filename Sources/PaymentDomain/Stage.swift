/// The four stages a payment passes through, in pipeline order, and `operations` (capture, void, refund of an
/// authorised payment), which no payment passes through: it consumes its own jobs and hands results to `notify`.
///
/// Each stage is consumed from its own durable quorum queue so it can be scaled on its own;
/// the names here are the single source of every queue, routing key and metric label (the runtime derives them from
/// the name, Pipeline's `Stage.name`).
public enum Stage: String, Sendable, CaseIterable, Codable, Comparable {
    case decrypt
    case authorize
    case submit
    case notify
    case operations

    /// Whether payments wait in this stage (`payments.stage`): the reconciler re-drives those; `operations` keeps its
    /// state in its own tables.
    public var carriesPayments: Bool { self != .operations }

    /// The stage that follows this one; `nil` after notification.
    public var next: Stage? {
        switch self {
        case .decrypt: .authorize
        case .authorize: .submit
        case .submit: .notify
        case .notify, .operations: nil
        }
    }

    public static func < (lhs: Stage, rhs: Stage) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// Where a payment is in its lifecycle: the `payments.stage` column. While a stage's queue carries the payment it is
/// that ``Stage``; once notification has finished it is `done` and leaves every queue.
public enum PaymentStage: String, Sendable, CaseIterable, Codable {
    case decrypt
    case authorize
    case submit
    case notify
    case done

    public init(_ stage: Stage) {
        switch stage {
        case .decrypt: self = .decrypt
        case .authorize: self = .authorize
        case .submit: self = .submit
        case .notify: self = .notify
        // No payment waits in the operations stage: its payments are done with the AUTH pipeline.
        case .operations: self = .done
        }
    }

    /// The stage whose queue carries the payment; `nil` once it is done.
    public var queueStage: Stage? { Stage(rawValue: rawValue) }
}
