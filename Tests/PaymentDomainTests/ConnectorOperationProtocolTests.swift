import Foundation
import Testing
@testable import PaymentDomain

/// OPP's and TapPay's operations in the one money lifecycle (``OperationProtocol``): what each decision sends, what each
/// refuses with a classified code, and how a lost answer is reconciled from each connector's status query. Pure.
@Suite struct ConnectorOperationProtocolTests {
    typealias T = OperationProtocolTests
    static let connectors: [OperationProtocol.Transport] = [.opp, .tapPay]

    static func decide(_ kind: OperationRequest.Kind, _ amount: Int64?, _ lifecycle: MoneyLifecycle, _ transport: OperationProtocol.Transport,
                       now: Date = T.now) -> OperationProtocol.Decision {
        // A connector's AUTH answer carries no Trust Payments settle status: nothing in its decisions reads one.
        T.decide(T.request(kind, amount), lifecycle, .other(""), transport: transport, now: now)
    }

    // MARK: Deciding

    /// The decision table, per connector: (operation, amount, lifecycle) → the request sent and the lifecycle after it,
    /// or the refusal's / wait's code.
    @Test(arguments: [
        // A capture of the manual authorisation: OPP partly or fully, TapPay fully only.
        (OperationProtocol.Transport.opp, OperationRequest.Kind.capture, Int64?.some(600), T.suspended,
         "send CAPTURE 600 → captured 600"),
        (.opp, .capture, nil, T.suspended, "send CAPTURE 1000 → captured 1000"),
        (.tapPay, .capture, nil, T.suspended, "send CAPTURE 1000 → captured 1000"),
        (.tapPay, .capture, 1000, T.suspended, "send CAPTURE 1000 → captured 1000"),
        (.tapPay, .capture, 600, T.suspended, "refuse partial_capture_not_supported"),
        (.opp, .capture, 1001, T.suspended, "refuse amount_exceeds_authorized"),
        (.opp, .capture, nil, T.automatic, "refuse already_captured"),
        (.tapPay, .capture, nil, T.lifecycle(.settled), "refuse already_captured"),
        // A void: OPP reverses the uncaptured authorisation; TapPay has no void API.
        (.opp, .void, nil, T.suspended, "send REVERSAL → voided 0"),
        (.opp, .void, nil, T.automatic, "refuse payment_settled"),
        (.tapPay, .void, nil, T.suspended, "refuse operation_not_supported"),
        (.tapPay, .void, nil, T.automatic, "refuse operation_not_supported"),
        // A refund once settled (learnt before deciding), up to what is left.
        (.opp, .refund, 300, T.lifecycle(.settled), "send REFUND 300 → partially_refunded 1000"),
        (.tapPay, .refund, nil, T.lifecycle(.partiallyRefunded, refunded: 300), "send REFUND 700 → refunded 1000"),
        (.opp, .refund, 701, T.lifecycle(.partiallyRefunded, refunded: 300), "refuse amount_exceeds_refundable"),
        (.tapPay, .refund, 100, T.lifecycle(.refunded, refunded: 1000), "refuse amount_exceeds_refundable"),
        (.opp, .refund, 100, T.suspended, "refuse payment_not_captured"),
        (.tapPay, .refund, 100, T.automatic, "wait awaiting_settlement"),
        (.opp, .refund, 100, T.lifecycle(.voided, captured: 0), "refuse payment_voided"),
    ])
    func decisions(transport: OperationProtocol.Transport, kind: OperationRequest.Kind, amount: Int64?, lifecycle: MoneyLifecycle, expected: String) {
        let decision = Self.decide(kind, amount, lifecycle, transport)
        let shown: String = switch decision {
        case .send(let operation, let effect):
            switch operation {
            case .capture(let reference, let amount):
                "send CAPTURE \(amount.map(String.init) ?? "all") → \(effect.lifecycle.status.rawValue) \(effect.lifecycle.capturedAmount)\(reference == T.reference ? "" : " (wrong reference)")"
            case .void(let reference):
                "send REVERSAL → \(effect.lifecycle.status.rawValue) \(effect.lifecycle.capturedAmount)\(reference == T.reference ? "" : " (wrong reference)")"
            case .refund(let reference, let amount):
                "send REFUND \(amount) → \(effect.lifecycle.status.rawValue) \(effect.lifecycle.capturedAmount)\(reference == T.reference ? "" : " (wrong reference)")"
            case .lowerCapture, .hold:
                "a settlement update"
            }
        case .refuse(let code, _): "refuse \(code)"
        case .wait(let code, _): "wait \(code)"
        case .duplicate, .conflict: "\(decision)"
        }
        #expect(shown == expected)
        if case .refuse(let code, _) = decision { #expect(FailureCatalogue.entry(for: code)?.outcomes.contains(.operationFailed) == true, "\(code)") }
        if case .wait(let code, _) = decision { #expect(FailureCatalogue.entry(for: code)?.outcomes == [.retried], "\(code)") }
    }

    /// Every state × operation × amount a connector may meet: whatever is sent keeps the invariants, follows an edge of
    /// the lifecycle and is a request of the connector's own (never a TRANSACTIONUPDATE); every refusal is catalogued.
    @Test(arguments: connectors)
    func everyConnectorDecisionKeepsTheInvariants(transport: OperationProtocol.Transport) {
        let lifecycles = [T.suspended, T.automatic, T.lifecycle(.settled), T.lifecycle(.partiallyRefunded, refunded: 400),
                          T.lifecycle(.refunded, refunded: 1000), T.lifecycle(.voided, captured: 0), T.lifecycle(.captured, captured: 600)]
        for lifecycle in lifecycles {
            for kind in OperationRequest.Kind.allCases {
                for amount in kind == .void ? [nil] : [nil, 1, 400, 600, 1000, 1001] as [Int64?] {
                    let decision = Self.decide(kind, amount, lifecycle, transport)
                    let label = "\(transport) \(lifecycle.status) \(kind) \(amount.map(String.init) ?? "-")"
                    switch decision {
                    case .send(let operation, let effect):
                        // A request of the processor's own: a capture of a stated amount, a void or a refund.
                        let own = switch operation {
                        case .capture(_, let amount): amount != nil
                        case .void, .refund: true
                        case .lowerCapture, .hold: false
                        }
                        #expect(own, "\(label)")
                        #expect(effect.lifecycle.isConsistent && lifecycle.status.successors.contains(effect.lifecycle.status), "\(label)")
                        #expect(transport.capturesPartially || kind != .capture || effect.lifecycle.capturedAmount == lifecycle.authorizedAmount, "\(label)")
                        #expect(transport.voids || kind != .void, "\(label)")
                    case .refuse(let code, _):
                        #expect(FailureCatalogue.entry(for: code)?.outcomes.contains(.operationFailed) == true, "\(label): \(code)")
                    case .wait(let code, _):
                        #expect(FailureCatalogue.entry(for: code)?.outcomes == [.retried], "\(label): \(code)")
                    case .duplicate, .conflict:
                        Issue.record("\(label): no earlier operation exists")
                    }
                }
            }
        }
    }

    /// `captureWithin` ended on an uncaptured authorisation: OPP reverses it; TapPay (no void) reports it
    /// `operation_not_supported` rather than refund a trade never captured, which no source documents.
    @Test func theExpiryVoidPerConnector() {
        let expired = T.snapshot(T.suspended, transport: .opp, now: T.now.addingTimeInterval(7200))
        guard case .send(.void(T.reference), let effect)? = T.machine.expiry(expired, gateway: T.facts(.other(""))) else {
            Issue.record("OPP's expiry is not a reversal")
            return
        }
        #expect(effect.lifecycle.status == .voided && effect.event == .voided && effect.amount == 1000)
        var tapPay = expired
        tapPay.transport = .tapPay
        #expect(T.machine.expiry(tapPay, gateway: T.facts(.other("")))?.code == "operation_not_supported")
    }

    /// A late AUTH on a payment reported failed: an OPP pre-authorisation is reversed; an OPP debit or any TapPay trade
    /// (no void API) goes to review, where a refund is due.
    @Test func theLateAuthorisationPerConnector() {
        let facts = T.facts(.other(""))
        #expect(T.machine.lateAuthorization(facts, transport: .opp, captureMode: .manual) == .void(.void(transactionReference: T.reference)))
        #expect(T.machine.lateAuthorization(facts, transport: .opp, captureMode: .automatic) == .review(code: "late_authorization", reason: "the late OPP debit (DB) is captured: a refund is due"))
        for mode in CaptureMode.allCases {
            guard case .review("late_authorization", _) = T.machine.lateAuthorization(facts, transport: .tapPay, captureMode: mode) else {
                Issue.record("a TapPay late AUTH is not for review")
                continue
            }
        }
    }

    // MARK: Reconciling a lost answer

    static let settled = T.lifecycle(.settled)
    static func effect(_ status: LifecycleStatus, refunded: Int64) -> OperationProtocol.Effect {
        .init(lifecycle: T.lifecycle(status, refunded: refunded), event: .refunded, amount: 300)
    }

    static let capture = GatewayOperation.capture(transactionReference: T.reference, amount: 600)
    static let captureEffect = OperationProtocol.Effect(lifecycle: T.lifecycle(.captured, captured: 600), event: .captured, amount: 600)
    static let refund = GatewayOperation.refund(parentTransactionReference: T.reference, amount: 300)

    /// TapPay: the trade record's `is_captured` settles a capture either way; its cumulative `refund_amount` confirms a
    /// refund only when it is exactly the payment's earlier refunds plus this one, and anything else is review, never
    /// a resend.
    @Test(arguments: [
        (true, GatewayOperation.capture(transactionReference: T.reference, amount: 1000), OperationProtocol.ShownPayment(isCaptured: true, refundedAmount: 0), "took_effect"),
        (true, .capture(transactionReference: T.reference, amount: 1000), .init(isCaptured: false, refundedAmount: 0), "not_applied"),
        (true, .capture(transactionReference: T.reference, amount: 1000), .init(isCaptured: nil, refundedAmount: 0), "reconciliation_inconclusive"),
        (false, .refund(parentTransactionReference: T.reference, amount: 300), .init(isCaptured: true, refundedAmount: 700), "took_effect"),
        (false, .refund(parentTransactionReference: T.reference, amount: 300), .init(isCaptured: true, refundedAmount: 400), "refund_outcome_unknown"),
        (false, .refund(parentTransactionReference: T.reference, amount: 300), .init(isCaptured: true, refundedAmount: 1000), "refund_outcome_unknown"),
        (false, .refund(parentTransactionReference: T.reference, amount: 300), .init(isCaptured: true, refundedAmount: nil), "reconciliation_inconclusive"),
    ])
    func tapPayTradeRecords(authorized: Bool, operation: GatewayOperation, record: OperationProtocol.ShownPayment, expected: String) {
        let before = authorized ? T.suspended : T.lifecycle(.partiallyRefunded, refunded: 400)
        let verdict = T.machine.reconcile(operation, before: before, effect: Self.effect(.partiallyRefunded, refunded: 700), evidence: .payment(record))
        #expect(Self.name(verdict) == expected)
        #expect(T.machine.reconcile(operation, before: before, effect: Self.captureEffect, evidence: .payment(nil)).code == "reconciliation_inconclusive")
    }

    /// OPP: the transactions under the operation's own merchantTransactionId. One successful one of its kind and amount
    /// took effect; none means a capture or reversal was not applied, but a refund goes to review; two, another
    /// amount or a rejected one go to review; a pending one is queried again.
    @Test(arguments: [
        (GatewayOperation.capture(transactionReference: T.reference, amount: 600), [OperationProtocol.TransactionRecord(kind: .capture, amount: 600, result: .succeeded)], "took_effect"),
        (.capture(transactionReference: T.reference, amount: 600), [], "not_applied"),
        (.capture(transactionReference: T.reference, amount: 600), [.init(kind: .refund, amount: 600, result: .succeeded)], "not_applied"),
        (.capture(transactionReference: T.reference, amount: 600), [.init(kind: .capture, amount: 500, result: .succeeded)], "operation_state_unexpected"),
        (.capture(transactionReference: T.reference, amount: 600), [.init(kind: .capture, amount: 600, result: .pending)], "reconciliation_inconclusive"),
        (.capture(transactionReference: T.reference, amount: 600), [.init(kind: .capture, amount: 600, result: .rejected)], "operation_state_unexpected"),
        (.void(transactionReference: T.reference), [.init(kind: .void, amount: nil, result: .succeeded)], "took_effect"),
        (.void(transactionReference: T.reference), [], "not_applied"),
        (.refund(parentTransactionReference: T.reference, amount: 300), [.init(kind: .refund, amount: 300, result: .succeeded)], "took_effect"),
        (.refund(parentTransactionReference: T.reference, amount: 300), [], "refund_outcome_unknown"),
        (.refund(parentTransactionReference: T.reference, amount: 300),
         [.init(kind: .refund, amount: 300, result: .succeeded), .init(kind: .refund, amount: 300, result: .succeeded)], "operation_state_unexpected"),
    ])
    func oppTransactions(operation: GatewayOperation, records: [OperationProtocol.TransactionRecord], expected: String) {
        let verdict = T.machine.reconcile(operation, before: T.suspended, effect: Self.captureEffect, evidence: .transactions(records))
        #expect(Self.name(verdict) == expected)
    }

    /// Which lost answers may be reconciled at all: every connector operation; of Trust Payments', not a REFUND.
    @Test func whichLostAnswersAreQueried() {
        #expect(!T.machine.reconcilable(Self.refund, transport: .webservices))
        #expect(T.machine.reconcilable(T.update(.cancelled, nil), transport: .webservices))
        for transport in Self.connectors {
            #expect(T.machine.reconcilable(Self.refund, transport: transport) && T.machine.reconcilable(Self.capture, transport: transport))
        }
    }

    static func name(_ verdict: OperationProtocol.Reconciliation) -> String {
        switch verdict {
        case .tookEffect: "took_effect"
        case .notApplied: "not_applied"
        case .inconclusive(let code, _), .review(let code, _): code
        }
    }
}
