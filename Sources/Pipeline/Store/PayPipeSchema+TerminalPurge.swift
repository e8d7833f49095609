extension PayPipeSchema {
    /// Migration 2: card data is crypto-shredded the moment a payment becomes terminal, whichever stage or tool
    /// ends it. The submit stage already purged in its own transactions, but a payment that failed in authorize
    /// (`invalid_currency`, `merchant_not_configured`, …), ran past its deadline in the reconciler, or was resolved
    /// by an operator kept its encrypted card data forever. A trigger in the database is the one place no code
    /// path can bypass; it runs inside the transaction that commits the terminal status, so the purge and the
    /// status are atomic. Existing terminal payments are purged once when the migration applies.
    static let terminalPurge = """
    CREATE FUNCTION payments_purge_card_data() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE card_data SET nonce = NULL, ciphertext = NULL, purged_at = now()
            WHERE payment_id = NEW.id AND purged_at IS NULL;
        UPDATE gateway_requests SET nonce = NULL, ciphertext = NULL, purged_at = now()
            WHERE payment_id = NEW.id AND purged_at IS NULL;
        RETURN NULL;
    END $$;
    CREATE TRIGGER payments_terminal_purge AFTER UPDATE OF status ON payments
        FOR EACH ROW
        WHEN (NEW.status IN ('authorized', 'declined', 'failed', 'needs_review') AND OLD.status IS DISTINCT FROM NEW.status)
        EXECUTE FUNCTION payments_purge_card_data();

    UPDATE card_data c SET nonce = NULL, ciphertext = NULL, purged_at = now()
        FROM payments p
        WHERE p.id = c.payment_id AND c.purged_at IS NULL AND p.status IN ('authorized', 'declined', 'failed', 'needs_review');
    UPDATE gateway_requests g SET nonce = NULL, ciphertext = NULL, purged_at = now()
        FROM payments p
        WHERE p.id = g.payment_id AND g.purged_at IS NULL AND p.status IN ('authorized', 'declined', 'failed', 'needs_review');
    """
}
