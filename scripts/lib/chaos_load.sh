# The load and the checks of a chaos run, shared by scripts/chaos and scripts/lib/chaos_cluster.sh (source it after
# stack.sh and stack_init; bash only). The caller sets PREFIX, RUN_DIR, JOBS, CAPTURE_URL (one node's amqp:// URL for
# the Python helpers), TRACE_QUEUE, RESULTS_QUEUE and defines rmq() (rabbitmqctl against a running node).
#
#   chaos_defaults              short timeouts and retry tiers, so that faults resolve within the run
#   chaos_start_load            simulator (faults), receiver (fails 20 % of first attempts), the workers, results capture
#   chaos_publish_wave [PREFIX] one wave of CHAOS_WAVE (200) sample jobs, appended to $RUN_DIR/jobs.jsonl (a PREFIX:
#                               a probe of valid jobs to the webservices merchant)
#   chaos_wave_merchant N       the merchant wave N goes to (all three connectors, both Trust Payments transports)
#   chaos_expected_so_far       jobs published so far that must end terminal (not meant for a dead-letter queue)
#   chaos_done_count [PREFIX]   payments of the run (or of PREFIX) with stage done; -1 if the database is not answering
#   chaos_queued                messages in work and retry queues; -1 if the broker is not answering
#   chaos_checks ELAPSED FAULTS the assertions (scripts/lib/chaos_check.py); returns 1 if any failed
#   chaos_recurring_step CITS DEFERRED SECRETS   stored credentials and deferred payments (scripts/lib/chaos_recurring.py),
#                               one step per call: publish the CITs and deferred jobs, then the MITs and completions as
#                               the payments get there; RECURRING is 2 once everything is published
#   chaos_recurring_check [DLQ.json]     their assertions; returns 1 if any failed

chaos_default() { export "$1=${!1:-$2}"; }

chaos_defaults() {
    # The retry budget is large enough that no transient fault can exhaust it: a dead letter here is a finding, not a
    # tuning artefact. Each can be overridden from the environment (e.g. a very eager reconciler: PAYPIPE_STUCK_AFTER=2s).
    chaos_default PAYPIPE_RETRY_DELAYS 500ms,1s,2s,3s; chaos_default PAYPIPE_MAX_RETRIES 60
    chaos_default PAYPIPE_GATEWAY_TIMEOUT 2s; chaos_default PAYPIPE_GATEWAY_CONNECT_TIMEOUT 1s; chaos_default PAYPIPE_WEBSERVICES_TIMEOUT 2s; chaos_default PAYPIPE_WEBSERVICES_CONNECT_TIMEOUT 1s; chaos_default PAYPIPE_RECONCILE_GRACE 2s
    chaos_default PAYPIPE_STUCK_AFTER 60s; chaos_default PAYPIPE_RECONCILE_INTERVAL 5s
    chaos_default PAYPIPE_GATEWAY_BREAKER_OPEN 1s; chaos_default PAYPIPE_WEBHOOK_BREAKER_OPEN 1s; chaos_default PAYPIPE_WEBHOOK_TIMEOUT 3s
    chaos_default PAYPIPE_PAYMENT_DEADLINE 2h; chaos_default PAYPIPE_APPLEPAY_MAX_AGE 2h; chaos_default PAYPIPE_SHUTDOWN_TIMEOUT 5s
    chaos_default PAYPIPE_LOG_LEVEL info
    WAVE="${CHAOS_WAVE:-200}" WAVE_INTERVAL="${CHAOS_WAVE_INTERVAL:-3}"
    published=0 wave=0
    : > "$RUN_DIR/jobs.jsonl"; : > "$RUN_DIR/card-secrets.jsonl"
}

chaos_start_load() {
    echo "== simulator (503 3%, timeout-after-AUTH 2%, reset-after-AUTH 2%), receiver (fails 20% of first attempts), workers"
    : > "$STACK_LOGS/webhook-receiver.log"
    # AUTHs settle 20 s after they are released, so the run's refunds meet both unsettled and settled payments.
    stack_start_simulator PAYPIPE_SIM_FAULT_RATE=0.03 PAYPIPE_SIM_TIMEOUT_RATE=0.02 PAYPIPE_SIM_RESET_RATE=0.02 PAYPIPE_SIM_SLOW=3s PAYPIPE_SIM_SETTLE_DELAY=20
    stack_start_receiver PAYPIPE_RECEIVER_FAIL_FIRST_PERCENT=20
    local name batch
    for name in "${WORKERS[@]}"; do
        batch=()
        case "$name" in submit-*) batch=(PAYPIPE_BATCH_SIZE=5) ;; notify-*) batch=(PAYPIPE_BATCH_SIZE=20) ;; esac
        stack_start_worker "${name%-*}" "${name##*-}" "${batch[@]}"
    done
    stack_wait_healthy
    rmq delete_queue "$RESULTS_QUEUE" >/dev/null 2>&1 || true
    python3 scripts/lib/capture_messages.py bind "$CAPTURE_URL" "$RESULTS_QUEUE" paypipe.results "payment.#"
}

chaos_publish_wave() {
    local size=$(( JOBS - published < WAVE ? JOBS - published : WAVE )) prefix="${1:-$PREFIX-$wave}"
    [ -z "${1:-}" ] || size="${CHAOS_PROBE:-5}"
    local extra=(); [ -z "${1:-}" ] || extra=(--all-good)   # a probe is all valid jobs: each must end authorized
    # The waves rotate over the merchants of all three connectors: of every five, two go to the Trust Payments
    # webservices merchant, one each to its jwt twin, the OPP merchant and the TapPay one (fresh primes: < 90 s old).
    if [ -z "${1:-}" ]; then extra=(--merchant "$(chaos_wave_merchant "$wave")"); fi
    "$BIN/paypipe" job publish --sample "$size" --prefix "$prefix" "${extra[@]}" --card-secrets "$RUN_DIR/wave.secrets" >> "$RUN_DIR/jobs.jsonl"
    cat "$RUN_DIR/wave.secrets" >> "$RUN_DIR/card-secrets.jsonl"; rm -f "$RUN_DIR/wave.secrets"
    [ -n "${1:-}" ] || published=$(( published + size )) wave=$(( wave + 1 ))
}

chaos_wave_merchant() {
    case $(( $1 % 5 )) in 1) echo sandbox-merchant-opp;; 2) echo sandbox-merchant-jwt;; 3) echo sandbox-merchant-tappay;; *) echo sandbox-merchant;; esac
}

chaos_expected_so_far() { grep -vcE '"kind":"(unknownMerchant|malformed)"' "$RUN_DIR/jobs.jsonl" || true; }

chaos_done_count() {
    local prefix="${1:-$PREFIX}"
    psql "$PAYPIPE_DATABASE_URL" -Atqc "SELECT count(*) FROM payments WHERE left(job_id, ${#prefix} + 1) = '$prefix-' AND stage = 'done'" 2>/dev/null || echo -1
}

chaos_queued() {
    local listing
    listing=$(rmq list_queues -q --no-table-headers name messages 2>/dev/null) || { echo -1; return; }
    awk -v t="$TRACE_QUEUE" '$1 ~ /^paypipe\./ && $1 !~ /\.dlq$/ && $1 != t { n += $2 } END { print n + 0 }' <<<"$listing"
}

chaos_checks() {
    local elapsed="$1" faults="$2" dlqs status=0
    echo "== checks"
    rmq list_queues -q --no-table-headers name messages > "$RUN_DIR/queues.txt"
    dlqs=$(awk '$1 ~ /^paypipe\.[a-z]+\.dlq$/ { print $1 }' "$RUN_DIR/queues.txt")
    # shellcheck disable=SC2086
    python3 scripts/lib/capture_messages.py peek "$CAPTURE_URL" "$RUN_DIR/dlq.capture" $dlqs > "$RUN_DIR/dlq.json"
    python3 scripts/lib/capture_messages.py peek "$CAPTURE_URL" "$RUN_DIR/results.capture" "$RESULTS_QUEUE" > "$RUN_DIR/results.json"
    python3 scripts/lib/chaos_check.py --prefix "$PREFIX" --jobs "$RUN_DIR/jobs.jsonl" --receiver-log "$STACK_LOGS/webhook-receiver.log" \
        --simulator "$(stack_simulator_url)" --queues "$RUN_DIR/queues.txt" --dlq "$RUN_DIR/dlq.json" --elapsed "$elapsed" \
        --trace-queue "$TRACE_QUEUE" --faults "$faults" --results "$RUN_DIR/results.json" || status=1
    return "$status"
}

# Stored credentials and deferred payments (docs/recurring.md) under the same faults, with a prefix of their own (RECURRING_PREFIX:
# the sample jobs' checks never see them). Each step that the broker or the database refuses is tried again next call.
chaos_recurring_step() {
    RECURRING_PREFIX="${PREFIX}rc"
    case "${RECURRING:-0}" in
        0) if python3 scripts/lib/chaos_recurring.py publish "$RECURRING_PREFIX" "$RUN_DIR" "$BIN/paypipe" "$PAYPIPE_SANDBOX_DIR/pki" \
                  "${CHAOS_CITS:-$1}" "${CHAOS_DEFERRED:-$2}" "$RUN_DIR/$3" > "$RUN_DIR/recurring.publish" 2>&1; then
               RECURRING=1
           fi ;;
        1) if python3 scripts/lib/chaos_recurring.py follow "${CAPTURE_URL:-$PAYPIPE_AMQP_URL}" "$RECURRING_PREFIX" "$RUN_DIR" "$BIN/paypipe" >> "$RUN_DIR/recurring.log" 2>&1; then
               RECURRING=2
           fi ;;
    esac
}

chaos_recurring_check() {
    RECURRING_PREFIX="${PREFIX}rc"
    echo "== stored credentials (CITs, MITs) and deferred completions: the simulator's ledgers against the payments"
    python3 scripts/lib/chaos_recurring.py check "$(stack_simulator_url)" "$RECURRING_PREFIX" "$RUN_DIR" 120 "$@"
}
