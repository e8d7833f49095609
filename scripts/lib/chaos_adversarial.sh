#!/usr/bin/env bash
# `scripts/chaos adversarial [short|full]` (docs/chaos.md): the exactly-once protocol against competing consumers.
# Three submit workers; re-drives every few seconds by the workers' reconciler and by `paypipe reconcile` in a loop;
# orders retried under new job ids with the same orderReference (some after a decline); the simulator loses AUTHs
# before processing, loses answers after processing, answers slower than the timeout, and answers status queries
# after a random delay so that concurrent queries overlap; workers SIGKILLed. The waves are spread over the merchants
# of all three connectors (Trust Payments on both transports, OPP, TapPay). Once every wave is out, captures, voids
# and partial refunds of the authorised payments (some duplicated, some concurrent for one payment), as each
# connector supports them, under the same faults. Faults come from CHAOS_SEED (printed; set it to replay a run).
# The checker (scripts/lib/chaos_adversarial_check.py) maps every authorisation the simulator processed, on any face,
# to its payment and asserts: at most one per payment, every final status agrees with what the gateway processed,
# every payment terminal; scripts/lib/chaos_operations.py check asserts the operation invariants (docs/chaos.md), at most one gateway
# operation per operationId, every operation terminal with its event delivered; scripts/lib/chaos_recurring.py check the
# CITs storing credentials on Trust Payments and OPP, their MITs and the TapPay deferred payments' completions.
#
#   short: 250 jobs (CI, under 5 minutes), full: 2,000 jobs.  CHAOS_JOBS, CHAOS_TIMEOUT override.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
MODE="${1:-short}"
case "$MODE" in
    short) JOBS="${CHAOS_JOBS:-250}"; TIMEOUT="${CHAOS_TIMEOUT:-240}"; CITS=6 DEFERRED=6 ;;
    full)  JOBS="${CHAOS_JOBS:-2000}"; TIMEOUT="${CHAOS_TIMEOUT:-1200}"; CITS=25 DEFERRED=25 ;;
    *) echo "usage: scripts/chaos adversarial [short|full]" >&2; exit 64 ;;
esac
SEED="${CHAOS_SEED:-$(( (RANDOM << 15) | RANDOM ))}"
RANDOM=$SEED
PREFIX="adv-$(date +%s)"

. scripts/lib/stack.sh
scripts/services start
stack_init "${CHAOS_CONFIGURATION:-debug}"
stack_fresh_database paypipe_chaos
stack_setup
RUN_DIR="$STACK_VAR/chaos/$PREFIX"
mkdir -p "$RUN_DIR" && chmod 700 "$STACK_VAR/chaos" "$RUN_DIR"
RECONCILE_PID=""
cleanup() {
    trap - EXIT INT TERM
    [ -z "$RECONCILE_PID" ] || { kill -TERM "$RECONCILE_PID" 2>/dev/null || true; wait "$RECONCILE_PID" 2>/dev/null || true; }
    stack_stop_all
    [ "${PAYPIPE_CHAOS_KEEP:-0}" = 1 ] || scripts/services stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

. scripts/lib/chaos_load.sh   # chaos_default, chaos_wave_merchant
# Short windows so that re-drives hit attempts right at their reconciliation time (1 + 2 + 2 = 5 s).
chaos_default PAYPIPE_RETRY_DELAYS 300ms,700ms,1s,2s; chaos_default PAYPIPE_MAX_RETRIES 100
chaos_default PAYPIPE_GATEWAY_TIMEOUT 2s; chaos_default PAYPIPE_GATEWAY_CONNECT_TIMEOUT 1s; chaos_default PAYPIPE_WEBSERVICES_TIMEOUT 2s; chaos_default PAYPIPE_WEBSERVICES_CONNECT_TIMEOUT 1s; chaos_default PAYPIPE_RECONCILE_GRACE 2s
chaos_default PAYPIPE_SEND_WINDOW 1s; chaos_default PAYPIPE_MAX_STATUS_QUERIES 20
# The simulator's handlers block their thread (slow answers, query delays), so a request can wait behind them beyond
# the 2 s grace, and the webservices transport has no expiry: docs/submit.md's "lag risk", the mitigation it gives.
chaos_default PAYPIPE_NOT_FOUND_CONFIRMATIONS 2
chaos_default PAYPIPE_STUCK_AFTER 3s; chaos_default PAYPIPE_RECONCILE_INTERVAL 2s
chaos_default PAYPIPE_GATEWAY_BREAKER_OPEN 1s; chaos_default PAYPIPE_GATEWAY_BREAKER_FAILURES 50
chaos_default PAYPIPE_PAYMENT_DEADLINE 2h; chaos_default PAYPIPE_APPLEPAY_MAX_AGE 2h; chaos_default PAYPIPE_SHUTDOWN_TIMEOUT 5s
chaos_default PAYPIPE_LOG_LEVEL warning

echo "== adversarial chaos ($MODE): $JOBS jobs, seed $SEED (CHAOS_SEED=$SEED replays the faults)"
# AUTHs settle 20 s after their release, so refunds meet unsettled payments (void, lower capture) and settled ones.
stack_start_simulator PAYPIPE_SIM_SEED="$SEED" PAYPIPE_SIM_LOSE_RATE=0.04 PAYPIPE_SIM_TIMEOUT_RATE=0.04 PAYPIPE_SIM_RESET_RATE=0.04 \
    PAYPIPE_SIM_FAULT_RATE=0.02 PAYPIPE_SIM_SLOW=3s PAYPIPE_SIM_QUERY_DELAY=1500ms PAYPIPE_SIM_THREADS=128 PAYPIPE_SIM_SETTLE_DELAY=20
stack_start_receiver
WORKERS=(decrypt-0 authorize-0 submit-0 submit-1 submit-2 notify-0 operations-0)
for name in "${WORKERS[@]}"; do
    extra=()
    case "$name" in submit-*) extra=(PAYPIPE_BATCH_SIZE=4) ;; notify-*) extra=(PAYPIPE_BATCH_SIZE=20) ;; esac
    stack_start_worker "${name%-*}" "${name##*-}" "${extra[@]}"
done
stack_wait_healthy

# An operator's re-drive loop besides the workers' own reconcilers (5 s: the least `--stuck-after` accepted).
( while true; do "$BIN/paypipe" reconcile --stuck-after 5s >/dev/null 2>>"$STACK_LOGS/reconcile-loop.log" || true; sleep 3; done ) &
RECONCILE_PID=$!

# Waves of 25: after the first, about half retry an earlier wave's orders under new job ids (same orderReference),
# declined ones included, the others are new orders. Every wave has its own PANs.
WAVE=$(( JOBS < 25 ? JOBS : 25 ))
: > "$RUN_DIR/jobs.jsonl"; : > "$RUN_DIR/cards.jsonl"
published=0 wave=0
started=$(date +%s)
while [ "$published" -lt "$JOBS" ]; do
    size=$(( JOBS - published < WAVE ? JOBS - published : WAVE ))
    # A wave goes to its merchant (chaos_wave_merchant: all three connectors); a retry to the retried wave's.
    extra=(--merchant "$(chaos_wave_merchant "$wave")")
    if [ "$wave" -gt 0 ] && [ $(( RANDOM % 2 )) = 0 ]; then
        retried=$(( RANDOM % wave ))
        extra=(--order-prefix "$PREFIX-$retried" --merchant "$(chaos_wave_merchant "$retried")")
    fi
    "$BIN/paypipe" job publish --sample "$size" --prefix "$PREFIX-$wave" --pan-offset $(( wave * 1000 )) \
        --card-secrets "$RUN_DIR/wave.secrets" "${extra[@]}" >> "$RUN_DIR/jobs.jsonl"
    cat "$RUN_DIR/wave.secrets" >> "$RUN_DIR/cards.jsonl"; rm -f "$RUN_DIR/wave.secrets"
    published=$(( published + size )) wave=$(( wave + 1 ))
    # Stored credentials and deferred payments (scripts/lib/chaos_recurring.py): the CITs and deferred jobs after the
    # first wave, then each authorised CIT's MITs and each waiting payment's completion as they get there.
    [ "${RECURRING:-0}" = 2 ] || chaos_recurring_step "$CITS" "$DEFERRED" cards.jsonl
    # A random worker killed between waves (submit most often).
    victim="${WORKERS[RANDOM % ${#WORKERS[@]}]}"
    stack_kill "$victim" KILL || true; sleep $(( 1 + RANDOM % 2 )); stack_respawn "$victim"
    sleep $(( RANDOM % 3 ))
done

echo "== operations: captures, voids, partial refunds of the authorised payments (some duplicated, some concurrent)"
operations=0
if python3 scripts/lib/chaos_operations.py publish "$PAYPIPE_AMQP_URL" "$PAYPIPE_DATABASE_URL" "$PREFIX" "$RUN_DIR/operations.jsonl" "$BIN/paypipe" --now; then
    operations=1
fi

echo "== waiting for every payment to end (limit ${TIMEOUT}s)"
expected=$(grep -vcE '"kind":"(unknownMerchant|malformed)"' "$RUN_DIR/jobs.jsonl" || true)
converged=0
while [ $(( $(date +%s) - started )) -lt "$TIMEOUT" ]; do
    done_count=$(psql "$PAYPIPE_DATABASE_URL" -Atqc "SELECT count(*) FROM payments WHERE left(job_id, ${#PREFIX} + 1) = '$PREFIX-' AND stage = 'done'" 2>/dev/null || echo 0)
    [ "${RECURRING:-0}" = 2 ] || chaos_recurring_step "$CITS" "$DEFERRED" cards.jsonl
    if [ "$done_count" -ge "$expected" ] && [ "${RECURRING:-0}" = 2 ]; then converged=1; break; fi
    # More kills while work is in flight.
    if [ $(( RANDOM % 5 )) = 0 ]; then victim="submit-$(( RANDOM % 3 ))"; stack_kill "$victim" KILL || true; sleep 1; stack_respawn "$victim"; fi
    sleep 2
done
elapsed=$(( $(date +%s) - started ))
kill -TERM "$RECONCILE_PID" 2>/dev/null || true; wait "$RECONCILE_PID" 2>/dev/null || true; RECONCILE_PID=""

status=0
# The operations' check first: it waits (up to 120 s) for every operation to end. A void still in flight when the
# payments are all done has cancelled the AUTH at the gateway before PayPipe records it, which the ledger check
# below would read as a contradiction.
echo "== operations (the operation invariants, at most one gateway operation per operationId, every operation ended and notified)"
if [ "$operations" = 1 ]; then
    python3 scripts/lib/chaos_operations.py check "$PAYPIPE_DATABASE_URL" "$(stack_simulator_url)" "$RUN_DIR/operations.jsonl" 120 || status=1
else
    echo "   operations were never published"; status=1
fi
echo "== checks"
python3 scripts/lib/chaos_adversarial_check.py --prefix "$PREFIX" --jobs "$RUN_DIR/jobs.jsonl" --cards "$RUN_DIR/cards.jsonl" \
    --simulator "$(stack_simulator_url)" --seed "$SEED" --elapsed "$elapsed" --checked-elsewhere "${PREFIX}rc" || status=1
chaos_recurring_check || status=1
rm -f "$RUN_DIR/cards.jsonl"
elapsed=$(( $(date +%s) - started ))
[ "$converged" = 1 ] || status=2
echo "chaos adversarial ($MODE, $JOBS jobs, seed $SEED): elapsed ${elapsed}s, exit $status"
exit "$status"
