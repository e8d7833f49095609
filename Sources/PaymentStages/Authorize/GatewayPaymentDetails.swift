import Foundation
import Pipeline

/// The columns of a payment the gateway request is built from, as authorize's lock reads them
/// (``AuthorizeStage/lockWithCardData(_:on:)``), a plain value so the claims builder stays a pure function that tests
/// can call without a database row.
public struct GatewayPaymentDetails: Sendable, Equatable {
    public var paymentId: UUID
    /// The job's order reference; `nil` when the job failed before it was known.
    public var orderReference: String?
    /// Minor units.
    public var amountMinor: Int64?
    /// ISO 4217 alpha-3, as the job gave it.
    public var currency: String?
    /// The stored-credential part of the payment (nil: an ordinary one-off payment).
    public var storedCredential: StoredCredentialIntent? = nil

    public init(paymentId: UUID, orderReference: String?, amountMinor: Int64?, currency: String?) {
        self.paymentId = paymentId
        self.orderReference = orderReference
        self.amountMinor = amountMinor
        self.currency = currency
    }

    /// The `orderreference` sent to the gateway: the job's order reference, else the payment id.
    ///
    /// It must never change between attempts, because the submit stage finds an uncertain AUTH again by querying
    /// the gateway for this reference; both sources are fixed when the payment row is created.
    public var gatewayOrderReference: String {
        if let orderReference, !orderReference.isEmpty { return orderReference }
        return paymentId.paymentIDText
    }
}

/// What a payment asks of its connector about stored credentials (issue #44), in neutral terms; each connector's
/// folder maps it to its processor's fields (`<Name>StoredCredentials.swift`, docs/recurring.md "Per connector").
public enum StoredCredentialIntent: Sendable, Equatable, CustomStringConvertible {
    /// A customer-initiated payment (CIT) that stores its credential for `usage`.
    case store(CredentialUsage)
    /// A merchant-initiated payment (MIT) charging a stored credential: its reason, the usage the credential was stored
    /// for, and the processor's references sealed with it (``CredentialSecrets/references``). No card data goes along.
    case charge(MITReason, usage: CredentialUsage, references: [String: String])

    /// The references are secret (they can charge the card): only their names are shown.
    public var description: String {
        switch self {
        case .store(let usage): "store(\(usage.rawValue))"
        case .charge(let reason, let usage, let references):
            "charge(\(reason.rawValue), usage: \(usage.rawValue), references: \(references.keys.sorted()))"
        }
    }
}
