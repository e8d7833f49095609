import Pipeline

/// A payment and its event as the notify stage reads them at the start of a batch (``PaymentEventLoader``): the
/// payment row decides the branch (done, not terminal, deliver), the event is what gets sent.
public struct LoadedPayment: Sendable {
    public let payment: PaymentRecord
    /// `nil` while the payment is not terminal (nothing to notify yet).
    public let loaded: PaymentEventLoader.Loaded?

    public init(payment: PaymentRecord, loaded: PaymentEventLoader.Loaded?) {
        self.payment = payment
        self.loaded = loaded
    }
}
