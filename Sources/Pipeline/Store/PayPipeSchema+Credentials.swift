extension PayPipeSchema {
    /// Migration 13: stored credentials (docs/recurring.md) and what each payment says about its token and credential.
    ///
    /// `credentials` is written only by `CredentialStore`. One row per customer-initiated payment that stored a
    /// credential (`payment_id` unique, so a redelivered CIT cannot store twice). The sealed blob (`key_id`, `nonce`,
    /// `ciphertext`, AES-256-GCM under the data key, AAD = credential id) holds what the processor needs later and, for
    /// processors that need it, the network token; it is shredded (nulled, `shredded_at` set) when the credential
    /// leaves `active`. Plain columns hold nothing secret: network, token type, last four digits, expiry, Apple's
    /// `merchantTokenIdentifier` (the key of Apple's token-management calls, not a card number) and card metadata.
    ///
    /// `payments` gains, written by `PaymentStore`: the token type and, for an MPAN, its identifier and metadata;
    /// the usage a CIT asked to store (`store_credential`); for an MIT, the credential used and the MIT reason.
    static let credentials = """
    CREATE TABLE credentials (
        id                         text PRIMARY KEY CHECK (id ~ '^cred_[0-9a-f]{24}$'),
        merchant_id                text NOT NULL REFERENCES merchants(id),
        payment_id                 uuid NOT NULL UNIQUE REFERENCES payments(id),
        connector                  text NOT NULL,
        usage                      text NOT NULL CHECK (usage IN ('recurring','unscheduled','installment')),
        token_type                 text NOT NULL CHECK (token_type IN ('merchant','device','unknown')),
        network                    text,
        last4                      text CHECK (last4 ~ '^[0-9]{4}$'),
        expiry                     text CHECK (expiry ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
        merchant_token_identifier  text CHECK (char_length(merchant_token_identifier) BETWEEN 1 AND 64),
        card_metadata              jsonb NOT NULL DEFAULT '{}'::jsonb,
        state                      text NOT NULL DEFAULT 'active' CHECK (state IN ('active','unlinked','expired')),
        state_reason               text,
        state_changed_at           timestamptz,
        key_id                     text,
        nonce                      bytea,
        ciphertext                 bytea,
        shredded_at                timestamptz,
        created_at                 timestamptz NOT NULL DEFAULT now(),
        updated_at                 timestamptz NOT NULL DEFAULT now(),
        CHECK ((shredded_at IS NULL) = (ciphertext IS NOT NULL)),
        CHECK (state = 'active' OR shredded_at IS NOT NULL),
        CHECK ((state = 'active') = (state_changed_at IS NULL))
    );
    CREATE INDEX credentials_merchant ON credentials (merchant_id, created_at);
    CREATE INDEX credentials_merchant_token ON credentials (merchant_token_identifier) WHERE merchant_token_identifier IS NOT NULL;

    ALTER TABLE payments
        ADD COLUMN token_type text CHECK (token_type IN ('merchant','device','unknown')),
        ADD COLUMN merchant_token_identifier text CHECK (char_length(merchant_token_identifier) BETWEEN 1 AND 64),
        ADD COLUMN merchant_token_metadata jsonb,
        ADD COLUMN store_credential text CHECK (store_credential IN ('recurring','unscheduled','installment')),
        ADD COLUMN credential_id text REFERENCES credentials(id),
        ADD COLUMN mit_reason text CHECK (mit_reason IN
            ('recurring','unscheduled','installment','reauthorization','resubmission','delayed_charge'));
    CREATE INDEX payments_credential ON payments (credential_id) WHERE credential_id IS NOT NULL;
    """
}
