/// The shape of a stored request name (`payment_operations.request_type`, `operation_attempts.request_type`): what a
/// connector calls an operation's request or its status query (`OperationProtocol.Transport.RequestNames`). Which
/// names exist is the connectors' business, checked in Swift by the registry's test; the database only keeps the
/// column to names of this shape, so a new connector with new names needs no migration.
public enum StoredRequestName {
    /// At most this many characters.
    public static let maxLength = 64

    /// A letter, then letters, digits and underscores (ASCII).
    public static func fits(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        guard let first = scalars.first, scalars.count <= maxLength, isLetter(first) else { return false }
        return scalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    private static func isLetter(_ scalar: Unicode.Scalar) -> Bool { ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) }

    /// ``fits(_:)`` as a PostgreSQL condition on `column` (an integration test runs both over the same names).
    public static func sqlCondition(_ column: String) -> String {
        "\(column) ~ '^[A-Za-z][A-Za-z0-9_]{0,\(maxLength - 1)}$'"
    }
}

extension PayPipeSchema {
    /// Migration 25: the `request_type` CHECKs of migrations 7 and 8 listed the stored names of particular processors,
    /// so each new connector's names needed a migration. They become the name's shape (``StoredRequestName``); every
    /// value stored before fits it, so existing rows stay as they are and are read the same. The pairing of `CAPTURE`
    /// with `capture_amount` (migration 8) is left as it was.
    static let neutralRequestNames = """
    ALTER TABLE payment_operations DROP CONSTRAINT payment_operations_request_type_check;
    ALTER TABLE payment_operations ADD CONSTRAINT payment_operations_request_type_check
        CHECK (\(StoredRequestName.sqlCondition("request_type")));
    ALTER TABLE operation_attempts DROP CONSTRAINT operation_attempts_request_type_check;
    ALTER TABLE operation_attempts ADD CONSTRAINT operation_attempts_request_type_check
        CHECK (\(StoredRequestName.sqlCondition("request_type")));
    """
}
