/// Every failure code PayPipe produces, with its meaning, outcome, permanence and whether the merchant sees it: the
/// one list docs/failure-codes.md is generated from (`PaymentDomainTests.FailureCatalogueTests` fails when the page,
/// or a code written in Sources/, disagrees with it).
///
/// Not listed here: webhook attempt errors (`webhook_deliveries.error`: `timeout`, `ssrf_refused`, …, docs/notify.md),
/// which describe one delivery attempt, not the payment.
public enum FailureCatalogue {
    public static let all: [FailureCode] = job + token + authorize + submit + operations + notify + runtime + credentials

    /// The entry for a code as stored or sent (`gateway_70000` finds the `gateway_<errorcode>` family).
    public static func entry(for code: String) -> FailureCode? {
        all.first { $0.matches(code) }
    }

    /// The table of docs/failure-codes.md.
    public static func markdownTable() -> String {
        var lines = ["| code | origin | outcome | permanent | sent to the merchant | meaning |", "|---|---|---|---|---|---|"]
        for entry in all {
            let outcome = entry.outcomes.map(\.rawValue).joined(separator: " or ")
            lines.append("| `\(entry.code)` | \(entry.origin) | \(outcome) | \(entry.isPermanent ? "yes" : "no") | "
                + "\(entry.isReportedToMerchant ? "yes" : "no") | \(entry.meaning) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static let job: [FailureCode] = [
        FailureCode("malformed_job", [.deadLettered], origin: "decrypt, operations",
                    "the job is not strict JSON, not UTF-8, or has no valid `jobId`/`merchantId` (an operation: `operationId`/`merchantId`): it cannot be tied to a payment"),
        FailureCode("unknown_merchant", [.deadLettered], origin: "decrypt", "the job names a merchant that was never applied"),
        FailureCode("publisher_not_allowed", [.deadLettered], origin: "decrypt, operations",
                    "the job or operation names a merchant whose `publishers` do not include its AMQP `user_id` (or it has none): nothing is charged or recorded"),
        FailureCode("message_too_large", [.deadLettered], origin: "runtime", "the message is larger than `PAYPIPE_MAX_MESSAGE_BYTES`"),
        FailureCode("idempotency_conflict", [.deadLettered], origin: "decrypt",
                    "a job id already used with other content; the first payment is untouched"),
        FailureCode("invalid_job", [.paymentFailed, .operationFailed], origin: "decrypt, operations",
                    "a field of the job (or of an operation) is invalid; the reason names the field"),
    ]

    static let token: [FailureCode] = [
        FailureCode("malformed_token", [.paymentFailed], origin: "decrypt", "the Apple Pay token is not a valid token structure"),
        FailureCode("amount_pending_not_supported", [.paymentFailed], origin: "decrypt",
                    "the job has `amountPending` but its merchant's connector has no `deferredAmount` capability (docs/connectors.md lists which do): nothing is sent"),
        FailureCode("unsupported_version", [.paymentFailed], origin: "decrypt", "the token version is neither `EC_v1` nor `RSA_v1`"),
        FailureCode("signature_invalid", [.paymentFailed], origin: "decrypt", "the token's CMS signature does not verify"),
        FailureCode("certificate_invalid", [.paymentFailed], origin: "decrypt",
                    "the token's signing chain does not lead to the trust root, or lacks Apple's marker extensions"),
        FailureCode("signing_time_out_of_range", [.paymentFailed], origin: "decrypt",
                    "the token was signed too long before, or after, it was received"),
        FailureCode("unknown_merchant_key", [.paymentFailed], origin: "decrypt",
                    "the token is encrypted for a merchant key PayPipe does not hold"),
        FailureCode("decryption_failed", [.paymentFailed], origin: "decrypt", "the token's data does not decrypt (key agreement or GCM tag)"),
        FailureCode("payload_invalid", [.paymentFailed], origin: "decrypt", "the decrypted data is not Apple Pay payment data"),
        FailureCode("merchant_identity_invalid", [.refusedByCommand], origin: "merchant apply",
                    "a payment-processing certificate or key in a merchant document is unusable (not PEM, mismatched, wrong curve or size, no merchant identifier extension)"),
        FailureCode("amount_mismatch", [.paymentFailed], origin: "decrypt", "the token's amount or currency differs from the job's"),
        FailureCode("application_data_mismatch", [.paymentFailed], origin: "decrypt",
                    "the job's `applicationData` does not hash to the token header's (or only one of them has it)"),
        FailureCode("token_replayed", [.paymentFailed], origin: "decrypt", "the token's `transactionId` was already used by another payment"),
    ]

    /// Stored credentials and merchant-initiated payments (docs/recurring.md): every refusal is made before any gateway call.
    static let credentials: [FailureCode] = [
        FailureCode("credential_unknown", [.paymentFailed], origin: "decrypt, authorize",
                    "the MIT's `credentialId` names no credential of the job's merchant (another merchant's reads the same)"),
        FailureCode("credential_unlinked", [.paymentFailed], origin: "decrypt, authorize",
                    "the MIT's credential was unlinked (Apple's `UNLINK` event or `paypipe credential unlink`), also when that happened between decrypt and authorize"),
        FailureCode("credential_expired", [.paymentFailed], origin: "decrypt, authorize",
                    "the MIT's credential expired (its state, or the card or token expiry month has passed)"),
        FailureCode("credential_not_supported", [.paymentFailed], origin: "decrypt",
                    "the merchant's connector cannot store credentials or charge them (docs/connectors.md), has no processor code for the `mitReason`, or the credential was stored through another connector"),
        FailureCode("credential_usage_mismatch", [.paymentFailed], origin: "decrypt",
                    "the MIT's `mitReason` needs a credential stored for another usage (e.g. `recurring` on one stored for `unscheduled`)"),
    ]

    static let authorize: [FailureCode] = [
        FailureCode("merchant_not_configured", [.paymentFailed], origin: "authorize",
                    "the merchant's gateway settings are missing or invalid (type, site reference, JWT username or secret)"),
        FailureCode("invalid_request_types", [.paymentFailed], origin: "authorize",
                    "request types other than a sequence the merchant's connector supports (its request types, docs/connectors.md)"),
        FailureCode("invalid_currency", [.paymentFailed], origin: "authorize",
                    "no currency, an unknown one, or (merchant-decrypts) one differing from the token's"),
        FailureCode("invalid_amount", [.paymentFailed], origin: "authorize",
                    "no amount, not positive, over 13 digits, or (merchant-decrypts) differing from the token's"),
        FailureCode("card_data_missing", [.paymentFailed], origin: "authorize",
                    "the stored card data (or wallet token) the merchant's mode needs is absent or already purged"),
        FailureCode("invalid_card_data", [.paymentFailed], origin: "authorize", "the stored PAN or expiry date is malformed"),
        FailureCode("payment_not_decrypted", [.retried], origin: "authorize", "the hand-off arrived before the payment was decrypted"),
        FailureCode("amount_not_representable", [.paymentFailed, .operationFailed], origin: "authorize, operations",
                    "the connector cannot express the amount in its currency (docs/connectors.md, per connector); for an operation, a capture or refund amount"),
    ]

    static let submit: [FailureCode] = [
        FailureCode("gateway_<errorcode>", [.paymentDeclined, .paymentFailed, .operationFailed], origin: "submit, operations",
                    "the gateway's answer, by its error code: declined (e.g. 70000) or failed (e.g. 30000–30999, 10300); docs/submit.md. a connector's code keeps its own form (dotted result codes: `gateway_800.100.151`; numeric statuses: `gateway_121`), docs/connectors.md; an operation the gateway refused (e.g. 20012 a refund of an unsettled parent, 60017 not updatable)"),
        FailureCode("gateway_test_mode", [.needsReview], origin: "submit",
                    "the gateway answered a test-mode success outside sandbox (a connector that marks test results, docs/connectors.md): the merchant's account is a test channel"),
        FailureCode("gateway_query_ambiguous", [.needsReview], origin: "submit",
                    "the reconciliation query found more than one authorisation under the payment's own reference, or one that is not this payment's (a connector whose query lists records, docs/connectors.md)"),
        FailureCode("prime_expired", [.paymentFailed], origin: "submit, operations",
                    "the job's single-use processor credential (a prime) expired at the gateway, or was too old to send (its validity by kind minus the call timeout after the job's publish time); or a deferred payment got no completion within its prime's validity (counted from receipt), failed by the operations worker without a call; docs/connectors.md"),
        FailureCode("3ds_challenge_required", [.paymentDeclined], origin: "submit", "the gateway asked for a 3-D Secure challenge"),
        FailureCode("gateway_cancelled", [.paymentDeclined], origin: "submit", "the gateway authorised and cancelled (settle status 3)"),
        FailureCode("gateway_suspended", [.needsReview], origin: "submit", "the gateway authorised and suspended (settle status 2)"),
        FailureCode("gateway_settlestatus_unknown", [.retried], origin: "submit, operations",
                    "an authorisation with an unknown settlement state: reconciled by its processor's status query (before any operation on it)"),
        FailureCode("gateway_not_configured", [.paymentFailed, .needsReview, .operationFailed], origin: "submit, operations",
                    "the merchant has no usable gateway: failed before any AUTH, for review when an AUTH is unresolved; an operation is refused before any call"),
        FailureCode("missing_gateway_request", [.paymentFailed], origin: "submit", "no stored gateway request to send"),
        FailureCode("deadline_exceeded", [.paymentFailed], origin: "submit", "the payment deadline passed before any AUTH was sent"),
        FailureCode("reconciliation_inconclusive", [.retried, .needsReview, .operationNeedsReview], origin: "submit, operations",
                    "the status query could not establish an uncertain AUTH's (or settlement update's) outcome: retried, then for review"),
        FailureCode("attempt_state_inconsistent", [.needsReview], origin: "submit", "an AUTH attempt completed while the payment was submitting"),
        FailureCode("late_authorization_voided", [.paymentFailed], origin: "operations",
                    "the gateway authorised a payment PayPipe had failed; the late AUTH was voided automatically (`payment.voided`), the payment ends `failed`"),
        FailureCode("late_authorization", [.needsReview], origin: "submit",
                    "the gateway authorised a payment PayPipe had already failed, and the operations worker cannot void it automatically (it settled or was captured, its processor has no void, or its transport carries none): a person acts"),
        FailureCode("resolved_by_operator", [.paymentFailed, .paymentDeclined], origin: "operator",
                    "an operator closed a review (`paypipe payment resolve`, as authorized, declined or failed: recorded on each); the reason is the operator's"),
        FailureCode("gateway_outcome_uncertain", [.retried], origin: "submit", "the AUTH may have been processed: reconciled before any resend"),
        FailureCode("gateway_unavailable", [.retried], origin: "submit", "the gateway could not be reached; nothing was sent"),
        FailureCode("gateway_inconsistent", [.retried], origin: "submit", "the payment did not settle after repeated rounds of one batch"),
        FailureCode("awaiting_reconciliation", [.retried], origin: "submit", "an uncertain AUTH waits for its query time"),
        FailureCode("awaiting_confirmation", [.retried], origin: "submit", "a 'not found' answer waits for its confirmation query"),
        FailureCode("attempt_open", [.retried], origin: "submit, operations", "another consumer's AUTH (or operation) attempt is still open"),
        FailureCode("attempt_missing", [.retried], origin: "submit", "the payment is submitting without a current attempt"),
        FailureCode("attempt_superseded", [.retried], origin: "submit", "an answer for an attempt that is no longer the payment's current one"),
        FailureCode("payment_not_prepared", [.retried], origin: "submit", "the hand-off arrived before the payment was prepared"),
        FailureCode("circuit_open", [.retried], origin: "submit, notify", "the endpoint is failing; calls to it are paused"),
        FailureCode("merchant_busy", [.retried], origin: "submit", "the merchant's concurrency limit is reached"),
    ]

    /// Capture, void and refund (docs/operations-lifecycle.md). Refusals leave the payment's money unchanged.
    static let operations: [FailureCode] = [
        FailureCode("operation_not_supported", [.operationFailed], origin: "operations",
                    "the merchant's transport is `jwt`: whether its `/jwt/` endpoint accepts updates and refunds is unconfirmed, so operations need `webservices`; or its processor has no such API (one without a void takes neither a void nor the `captureWithin` expiry void; docs/connectors.md)"),
        FailureCode("partial_capture_not_supported", [.operationFailed], origin: "operations",
                    "a capture of less than the authorisation at a processor that captures in full only (docs/connectors.md): capture it all, then refund part"),
        FailureCode("operation_conflict", [.deadLettered], origin: "operations",
                    "an `operationId` already used by the merchant with other content (kind, payment or amount); the first operation is untouched"),
        FailureCode("operation_in_progress", [.retried], origin: "operations",
                    "another operation of the payment is not finished: one at a time, as an open one's amount is not yet known"),
        FailureCode("operation_under_review", [.operationFailed], origin: "operations",
                    "another operation of the payment is for review (e.g. a lost refund answer): an operator resolves it before the payment takes another"),
        FailureCode("awaiting_authorization", [.retried], origin: "operations", "the operation arrived before the payment's AUTH ended"),
        FailureCode("awaiting_settlement", [.retried], origin: "operations",
                    "the AUTH is settling: neither updatable nor refundable until settled; or the processor's status query does not show the payment captured yet"),
        FailureCode("payment_not_authorized", [.operationFailed], origin: "operations",
                    "the payment ended declined, failed or for review: there is nothing to capture, void or refund"),
        FailureCode("payment_voided", [.operationFailed], origin: "operations", "the payment was voided (by an operation or after `captureWithin`)"),
        FailureCode("authorization_cancelled", [.operationFailed], origin: "operations",
                    "the gateway reports the AUTH cancelled though PayPipe did not void it"),
        FailureCode("already_captured", [.operationFailed], origin: "operations",
                    "a capture of a payment already captured (by an earlier capture, or automatically by its AUTH): one capture per authorisation"),
        FailureCode("authorization_expired", [.operationFailed], origin: "operations",
                    "a capture after the authorisation's `captureWithin`: it is voided, not captured"),
        FailureCode("payment_not_captured", [.operationFailed], origin: "operations",
                    "a refund of a manual-capture authorisation not captured yet: void it instead"),
        FailureCode("payment_settled", [.operationFailed], origin: "operations",
                    "a void of a payment settled or settling: refund it instead"),
        FailureCode("amount_exceeds_authorized", [.operationFailed], origin: "operations", "a capture above the authorised amount"),
        FailureCode("amount_exceeds_refundable", [.operationFailed], origin: "operations",
                    "a refund above what is left: the captured amount before settlement, the settled amount less earlier refunds after it"),
        FailureCode("refund_outcome_unknown", [.operationNeedsReview], origin: "operations",
                    "a refund's answer was lost at a processor whose refund is a new transaction that no confirmed query finds by its parent: never resent automatically; (a processor's own refund) the refund's answer was lost and its status query does not show it"),
        FailureCode("operation_state_unexpected", [.operationNeedsReview], origin: "operations",
                    "a settlement update's answer was lost and the queried AUTH is neither as before nor as after it; (a processor's own operation) the query shows two transactions, another amount or a rejected one for the operation"),
        FailureCode("completion_too_early", [.retried], origin: "operations",
                    "a `payment.complete.requested` arrived before its deferred payment reached `awaiting_amount` (still in decrypt or authorize): retried"),
        FailureCode("payment_not_awaiting_amount", [.deadLettered], origin: "operations",
                    "a `payment.complete.requested` names a payment that does not await an amount (not a deferred payment, already completed with another amount, or ended): nothing is sent"),
        FailureCode("amount_exceeds_maximum", [.deadLettered], origin: "operations",
                    "a `payment.complete.requested` amount above the deferred job's `amount`, the most its completion may charge: nothing is sent; publish a corrected completion"),
        FailureCode("operation_payment_unknown", [.retried], origin: "operations",
                    "the operation names no payment of its merchant (yet: the payment job may still be in decrypt): retried, then dead-lettered `retries_exhausted`"),
        FailureCode("reconciliation_pending", [.retried], origin: "operations",
                    "an operation's answer was lost: the gateway is queried (its connector's status query, docs/connectors.md) before anything else is sent"),
        FailureCode("operation_not_applied", [.retried], origin: "operations",
                    "the status query shows a settlement update (or a processor's own capture or reversal) whose answer was lost did not take effect: a new attempt sends it; never a refund"),
        FailureCode("lifecycle_inconsistent", [.operationFailed], origin: "operations",
                    "the gateway's settlement state contradicts the payment's recorded lifecycle (e.g. settled while held suspended): refused for an operator to look at"),
    ]

    static let notify: [FailureCode] = [
        FailureCode("payment_not_terminal", [.retried], origin: "notify", "the notification arrived before the payment's result"),
        FailureCode("webhook_failed", [.retried], origin: "notify",
                    "a webhook attempt failed: retried; once its attempts are exhausted the message is dead-lettered as `retries_exhausted` (the results event is still sent)"),
    ]

    static let runtime: [FailureCode] = [
        FailureCode("malformed_message", [.deadLettered], origin: "runtime", "a hand-off is not a `{paymentId, merchantId, jobId}` object"),
        FailureCode("unknown_payment", [.deadLettered], origin: "runtime", "a hand-off names a payment that does not exist"),
        FailureCode("retries_exhausted", [.deadLettered], origin: "runtime", "a transient failure outlived the stage's retry tiers"),
        FailureCode("redelivery_limit", [.deadLettered], origin: "runtime", "the broker redelivered the message too often (a crash loop)"),
        FailureCode("unroutable", [.deadLettered], origin: "runtime", "a published message was returned by the broker as unroutable"),
        FailureCode("invalid_data", [.deadLettered], origin: "runtime", "the database refused a value itself (SQLSTATE class 22)"),
        FailureCode("database_unavailable", [.retried], origin: "runtime", "the database cannot be reached: held and retried in place"),
        FailureCode("database_conflict", [.retried], origin: "runtime", "a serialization failure or deadlock outlived its retries"),
        FailureCode("database_error", [.retried], origin: "runtime", "another database error"),
        FailureCode("internal_error", [.retried], origin: "runtime", "an unexpected error: retried a bounded number of times"),
    ]
}
