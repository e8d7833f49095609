extension PayPipeSchema {
    /// Migration 12: the database's lifecycle safety net is generated from ``MoneyLifecycle``'s own table, no longer
    /// written by hand in PL/pgSQL.
    ///
    /// `MoneyLifecycle.permits(_:)` is the one rule of a lifecycle change. The database keeps enforcing it as a safety
    /// net (a statement written wrongly still cannot refund a voided payment), in three parts:
    /// - the invariants of one state: the CHECK `payments_lifecycle_invariants` (migrations 7 and 10), unchanged;
    /// - the edge: `paypipe_lifecycle_edge(old, new)`, generated from ``LifecycleStatus/successors``;
    /// - the amounts: `paypipe_lifecycle_amounts_refused(…)`, generated from ``LifecycleStatus/capturedMayRise`` and
    ///   ``LifecycleStatus/capturedIsFixed``.
    /// The trigger function `payments_lifecycle` is replaced by one calling the two generated functions; it starts a
    /// lifecycle exactly as migration 7's did (`MoneyLifecycle.afterAuthorization`).
    ///
    /// `IntegrationTests.LifecycleRulesTests` enumerates every pair of states and shows the Swift rule and the database
    /// accept and refuse the same changes. A change of the Swift table changes this text and so this migration's
    /// checksum, which the migrator refuses on an existing database: such a change adds a migration of its own that
    /// regenerates the functions (`CREATE OR REPLACE`), and freezes this one's table here.
    static let lifecycleRules = lifecycleRulesSQL(LifecycleStatus.allCases)

    /// The generated SQL for `statuses` (all of them, in their declaration order, so the text is stable).
    static func lifecycleRulesSQL(_ statuses: [LifecycleStatus]) -> String {
        func array(_ members: [LifecycleStatus]) -> String {
            "ARRAY[\(members.map { "'\($0.rawValue)'" }.joined(separator: ", "))]::text[]"
        }
        let edges = statuses.map { status in
            "WHEN '\(status.rawValue)' THEN \(array(statuses.filter(status.successors.contains)))"
        }.joined(separator: "\n            ")
        return """
        CREATE OR REPLACE FUNCTION paypipe_lifecycle_edge(old_lifecycle text, new_lifecycle text)
        RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
            SELECT new_lifecycle = ANY (CASE old_lifecycle
            \(edges)
            ELSE ARRAY[]::text[] END)
        $$;

        CREATE OR REPLACE FUNCTION paypipe_lifecycle_amounts_refused(
            old_lifecycle text, old_authorized bigint, new_authorized bigint, old_captured bigint, new_captured bigint,
            old_refunded bigint, new_refunded bigint)
        RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
            SELECT new_authorized IS DISTINCT FROM old_authorized OR new_refunded < old_refunded
                OR (old_lifecycle <> ALL (\(array(statuses.filter(\.capturedMayRise)))) AND new_captured > old_captured)
                OR (old_lifecycle = ANY (\(array(statuses.filter(\.capturedIsFixed)))) AND new_captured <> old_captured)
        $$;

        \(lifecycleTrigger)
        """
    }

    /// Migration 7's trigger function `payments_lifecycle`, taken from that migration's text (which never changes once
    /// applied), with its hand-written edge and amount checks replaced by calls of the generated functions: how it
    /// starts a lifecycle (`MoneyLifecycle.afterAuthorization`) and when it checks one stay exactly as they were.
    static let lifecycleTrigger: String = {
        let sql = operations
        guard let function = sql.range(of: "CREATE FUNCTION payments_lifecycle()"),
              let checks = sql.range(of: "    -- LifecycleStatus.successors.\n", range: function.upperBound..<sql.endIndex),
              let end = sql.range(of: "    RETURN NEW;\nEND $$;", range: checks.upperBound..<sql.endIndex) else {
            preconditionFailure("migration 7 states the function payments_lifecycle with its edge check")
        }
        return "CREATE OR REPLACE FUNCTION payments_lifecycle()" + sql[function.upperBound..<checks.lowerBound] + """
            IF NOT paypipe_lifecycle_edge(OLD.lifecycle, NEW.lifecycle) THEN
                RAISE EXCEPTION 'illegal lifecycle change % -> %', OLD.lifecycle, NEW.lifecycle USING ERRCODE = 'check_violation';
            END IF;
            IF paypipe_lifecycle_amounts_refused(OLD.lifecycle, OLD.authorized_minor, NEW.authorized_minor, OLD.captured_minor,
                                                 NEW.captured_minor, OLD.refunded_minor, NEW.refunded_minor) THEN
                RAISE EXCEPTION 'illegal lifecycle amounts: captured % -> %, refunded % -> %',
                    OLD.captured_minor, NEW.captured_minor, OLD.refunded_minor, NEW.refunded_minor USING ERRCODE = 'check_violation';
            END IF;

        """ + sql[end]
    }()
}
