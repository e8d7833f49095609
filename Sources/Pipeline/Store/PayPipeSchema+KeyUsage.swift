extension PayPipeSchema {
    /// Migration 4: how many tokens each merchant key decrypted and when it last did, so an operator can tell when an
    /// old payment-processing key stopped being used and can be removed (`paypipe merchant keys --usage`). Written
    /// by the decrypt workers off the payment path (their upkeep adds what they counted since the last round).
    static let keyUsage = """
    CREATE TABLE merchant_key_usage (
        merchant_id      text NOT NULL,
        public_key_hash  text NOT NULL,
        tokens           bigint NOT NULL DEFAULT 0,
        first_used_at    timestamptz NOT NULL,
        last_used_at     timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, public_key_hash)
    );
    """
}
