import PaymentDomain

/// Timing and bounds of the submit stage's exactly-once protocol.
public struct SubmitSettings: Sendable, Equatable {
    /// Added to the client's total timeout before an unanswered AUTH is queried: an AUTH may still be in flight
    /// (in the gateway or at the acquirer) for a while after our side gave up.
    public var reconcileGrace: Double
    /// Inconclusive status-query answers tolerated before the payment goes to `needs_review`.
    public var maxInconclusiveQueries: Int
    /// Seconds after the payment was first received after which no AUTH is sent any more (`deadline_exceeded`).
    public var paymentDeadline: Double
    /// Consecutive transport failures that open an endpoint's circuit.
    public var circuitFailureThreshold: Int
    /// Seconds an open circuit refuses requests.
    public var circuitOpenSeconds: Double
    /// Gateway calls one merchant may have in flight in one worker.
    public var merchantConcurrency: Int
    /// Gateway calls one worker runs at once (threads, each with its keep-alive HTTP client), shared by its lanes:
    /// a batch's calls run concurrently, so the gateway round trip does not bound the stage's throughput.
    public var callConcurrency: Int
    /// Seconds after its attempt was committed after which an AUTH is not sent any more (`PAYPIPE_SEND_WINDOW`): the
    /// pool thread's send gate refuses it (`not_sent`, re-planned), so no AUTH reaches the gateway after
    /// `send_deadline + total timeout`, however long it queued behind other calls.
    public var sendWindow: Double
    /// "Not found" answers required, at least ``SubmitProtocol/confirmationSpacing`` apart, before an AUTH is resent
    /// (`PAYPIPE_NOT_FOUND_CONFIRMATIONS`).
    public var notFoundConfirmations: Int

    public init(
        reconcileGrace: Double = 30, maxInconclusiveQueries: Int = 5, paymentDeadline: Double = 600,
        circuitFailureThreshold: Int = 5, circuitOpenSeconds: Double = 30, merchantConcurrency: Int = 4,
        callConcurrency: Int = 8, sendWindow: Double = 5, notFoundConfirmations: Int = 1
    ) {
        self.sendWindow = sendWindow
        self.notFoundConfirmations = notFoundConfirmations
        self.callConcurrency = callConcurrency
        self.reconcileGrace = reconcileGrace
        self.maxInconclusiveQueries = maxInconclusiveQueries
        self.paymentDeadline = paymentDeadline
        self.circuitFailureThreshold = circuitFailureThreshold
        self.circuitOpenSeconds = circuitOpenSeconds
        self.merchantConcurrency = merchantConcurrency
    }

    /// The protocol's decisions with these settings.
    public var submitProtocol: SubmitProtocol {
        SubmitProtocol(paymentDeadline: paymentDeadline, maxInconclusiveQueries: maxInconclusiveQueries, notFoundConfirmations: notFoundConfirmations)
    }
}
