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

// Each stage's launch file declares its conformance: the reconciler rounds (re-driving, gauges, failure counts,
// upkeep) are ReconcilerComponent's (Reconciler.swift), which the launch wires and a stage never calls.
