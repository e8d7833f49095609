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
