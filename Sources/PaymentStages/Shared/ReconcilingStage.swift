import Pipeline
import Postgres

/// A stage's own part of each reconciler round, after stuck payments are re-driven: e.g. submit fails payments that
/// waited past their deadline before any AUTH. Returns the hand-offs to publish; the default does nothing.
public protocol ReconcilingStage: PaymentStageHandler {
    func reconcile(on connection: PostgresConnection) throws -> [(stage: Stage, message: StageMessage)]
}

extension ReconcilingStage {
    public func reconcile(on connection: PostgresConnection) throws -> [(stage: Stage, message: StageMessage)] { [] }
}

// The stages' reconciler hooks; the rounds themselves (re-driving, gauges, failure counts, upkeep) are
// ReconcilerComponent's (Reconciler.swift), which a stage never calls.
extension DecryptStage: ReconcilingStage {}
extension AuthorizeStage: ReconcilingStage {}
extension SubmitStage: ReconcilingStage {}
extension NotifyStage: ReconcilingStage {}
extension OperationsStage: ReconcilingStage {}
