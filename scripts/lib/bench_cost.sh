# The cost budget (scripts/bench --only cost): sourced by scripts/bench after scripts/lib/stack.sh, on services it
# has started or found running. One fixed run, the same on every machine:
#
#   payments    BENCH_COST_PAYMENTS (2000) valid jobs, a third each to the Trust Payments, OPP and TapPay sandbox
#               merchants (OPP's AUTHs with manual capture, so that the operations have real captures to make), all
#               queued before any worker starts; then each stage alone — decrypt, authorize, submit, notify — started
#               in front of its whole input, run until its queue is empty, stopped.
#   operations  500 operations on those payments (bench_cost.py publish-operations: voids, captures, refunds, one per
#               payment), all queued; then operations alone, then notify alone.
#
# A stage is done when the broker counted as many acknowledgements as it had deliveries to make (its global counters
# are live; queue depths lag by a statistics interval and once read empty too early).
#
# Every stage runs one worker with one lane, PAYPIPE_BATCH_SIZE (50, the default) and a prefetch of four batches, so
# with the whole input queued every batch is full but the last (a lane's first batch waits to fill too, BatchFill),
# and the number of batches, hence of set-based statements and commits, is the same on every run. Around each stage:
# a CHECKPOINT (so each stage's full-page images are those of a stage that starts right after one: the same every
# run), a snapshot of every counter, the stage, the worker stopped and its database sessions gone (their statistics
# are flushed when they end), a second snapshot. Timing-dependent work is switched off, not subtracted:
# PAYPIPE_RECONCILE_INTERVAL=0 (no reconciler or upkeep rounds), PAYPIPE_MERCHANT_CACHE_TTL=1h (one load per worker),
# PAYPIPE_GATEWAY_TIMEOUT=5s (the simulator answers at once; a TapPay prime is sent only while younger than 90 s minus
# this timeout, and on a loaded machine the primes queued first wait in front of three stages: 30 s left 60 s, too few),
# autovacuum off (for the measured tables, and for the server during the run: ALTER SYSTEM, reset on every exit of
# scripts/bench), no /healthz probes (they ask the database); the bench's own
# snapshot statements are marked and left out, its one session's transactions subtracted.
#
# Output: $STACK_LOGS/cost/ (every snapshot), var/bench/cost-<UTC date>.json, the table on stdout; with --check the
# guard against bench/cost-baseline.json, with --update-baseline a new baseline (and the docs/performance.md section).

cost_python() { python3 "$ROOT/scripts/lib/bench_cost.py" "$@"; }

# cost_stage PHASE STAGE COUNT: one measured stage (see the header), done once COUNT deliveries were acknowledged.
cost_stage() {
    local phase="$1" stage="$2" count="$3" prefix="$cost_dir/$1-$2" pid perf_pid="" worker_cpu pg_cpu
    echo "== cost: $phase, $stage" >&2
    cost_python checkpoint "$PAYPIPE_DATABASE_URL"
    cost_python snapshot "$PAYPIPE_DATABASE_URL" "$cost_prometheus" "$prefix-before.json"
    stack_start_worker "$stage" 0 PAYPIPE_CONCURRENCY=1 PAYPIPE_BATCH_SIZE="$cost_batch" PAYPIPE_PREFETCH=$((cost_batch * 4)) \
        PAYPIPE_BATCH_LINGER=1s PAYPIPE_RECONCILE_INTERVAL=0 PAYPIPE_MERCHANT_CACHE_TTL=1h PAYPIPE_GATEWAY_TIMEOUT=5s
    pid="${STACK_PIDS[$stage-0]}"
    if [ "$cost_perf" = 1 ]; then
        perf stat -e instructions:u -x, -o "$prefix-perf.txt" -p "$pid" >/dev/null 2>&1 &
        perf_pid=$!
    fi
    cost_python wait-acked "$cost_prometheus" "$prefix-before.json" "$count"
    worker_cpu=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import bench_cost; print(bench_cost.process_cpu(int(sys.argv[2])))' \
        "$ROOT/scripts/lib" "$pid")
    pg_cpu=$(cost_python backend-cpu "$PAYPIPE_DATABASE_URL")
    if [ -n "$perf_pid" ]; then kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" 2>/dev/null || true; fi
    stack_kill "$stage-0"
    cost_python wait-backends "$PAYPIPE_DATABASE_URL"
    cost_python snapshot "$PAYPIPE_DATABASE_URL" "$cost_prometheus" "$prefix-after.json"
    cost_python waldump "$PAYPIPE_DATABASE_URL" "$PAYPIPE_PG_DIR/data/pg_wal" "$prefix-before.json" "$prefix-after.json" \
        "$prefix-wal.json" || echo "   (pg_waldump: no WAL breakdown for $phase $stage)" >&2
    python3 - "$prefix-process.json" "$stage" "$worker_cpu" "$pg_cpu" "$prefix-perf.txt" <<'PY'
import json, os, sys
out, stage, worker, pg, perf = sys.argv[1:6]
instructions = {}
if os.path.exists(perf):
    for line in open(perf):
        parts = line.strip().split(",")
        if len(parts) > 2 and parts[2].startswith("instructions") and parts[0].isdigit():
            instructions[f"paypipe-{stage}"] = int(parts[0])
json.dump({"cpuSeconds": {f"paypipe-{stage}": float(worker), "postgres": float(pg)}, "instructions": instructions}, open(out, "w"))
PY
}

measure_cost() {
    local payments="${BENCH_COST_PAYMENTS:-2000}" merchant count i prefix="cost-$(date +%s)"
    cost_batch="${BENCH_COST_BATCH:-50}"
    cost_dir="$STACK_LOGS/cost"
    cost_prometheus="http://127.0.0.1:${PAYPIPE_RMQ_PROMETHEUS_PORT:-$(( ${PAYPIPE_AMQP_PORT:-5672} + 10020 ))}"
    rm -rf "$cost_dir"; mkdir -p "$cost_dir"
    # Instructions per process where the kernel lets perf count them (virtual machines often do not): reported only.
    cost_perf=0
    if command -v perf >/dev/null && perf stat -e instructions:u -x, true 2>&1 | grep -q '^[0-9]'; then cost_perf=1
    else echo "   perf: instructions cannot be counted here; CPU instructions per process are left out" >&2; fi

    stack_fresh_database paypipe_cost
    scripts/services rabbitmqctl list_queues -q name messages 2>/dev/null | awk '$1 ~ /^paypipe\./ && $2 > 0 {print $1}' | while read -r queue; do
        scripts/services rabbitmqctl purge_queue "$queue" >/dev/null 2>&1 || true
    done
    stack_setup >/dev/null
    # OPP with manual capture (a PA per AUTH), so that the operations include real captures and voids at OPP (beside
    # the other documents: their paths are relative to it).
    python3 - "$PAYPIPE_SANDBOX_DIR/merchant-opp.json" "$PAYPIPE_SANDBOX_DIR/cost-merchant-opp-manual.json" <<'PY'
import json, sys
document = json.load(open(sys.argv[1]))
document["gateway"]["captureMode"] = "manual"
json.dump(document, open(sys.argv[2], "w"))
PY
    "$BIN/paypipe" merchant apply --file "$PAYPIPE_SANDBOX_DIR/cost-merchant-opp-manual.json" >/dev/null
    cost_prepared=1
    cost_python prepare "$PAYPIPE_DATABASE_URL"
    # Trust Payments' AUTHs never settle in this run (no PAYPIPE_SIM_SETTLE_DELAY): its operations are voids.
    stack_start_simulator PAYPIPE_SIM_SEED=42
    stack_start_receiver

    # Every job queued before any worker starts (TapPay primes stay valid 90 s: decrypt starts right after).
    i=0
    for merchant in sandbox-merchant sandbox-merchant-opp sandbox-merchant-tappay; do
        count=$(( payments / 3 + (i < payments % 3 ? 1 : 0) )); i=$((i + 1))
        "$BIN/paypipe" job publish --sample "$count" --merchant "$merchant" --all-good --prefix "$prefix-$merchant" >/dev/null
    done
    for stage in decrypt authorize submit notify; do cost_stage payments "$stage" "$payments"; done

    local operations
    operations=$(cost_python publish-operations "$PAYPIPE_AMQP_URL" "$PAYPIPE_DATABASE_URL" "$cost_dir/operations.jsonl")
    # Each operation ends in one event for notify.
    for stage in operations notify; do cost_stage operations "$stage" "$operations"; done
    stack_stop_all
    cost_python finish "$PAYPIPE_DATABASE_URL"

    # What the run did, checked after the measurement: every payment authorised and notified, every operation ended.
    python3 - "$PAYPIPE_DATABASE_URL" "$cost_dir/outcomes.json" "$payments" "$operations" <<'PY'
import json, sys, psycopg
url, out, payments, operations = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with psycopg.connect(url) as c:
    p = dict(c.execute("SELECT status || '/' || stage, count(*) FROM payments GROUP BY 1").fetchall())
    o = dict(c.execute("SELECT kind || ':' || state || coalesce(':' || error_code, ''), count(*) FROM payment_operations GROUP BY 1").fetchall())
    unnotified = c.execute("SELECT count(*) FROM payment_operations WHERE notified_at IS NULL").fetchone()[0]
json.dump({"payments": p, "operations": o, "operationsNotNotified": unnotified}, open(out, "w"))
print(f"   outcomes: payments {p}; operations {o}; operations not notified {unnotified}", file=sys.stderr)
if p.get("authorized/done", 0) != payments or sum(o.values()) != operations or unnotified:
    sys.exit("bench cost: the run did not do what it measures (see above): its counters are not a budget")
PY
    printf '{"payments": %s, "operations": %s, "batchSize": %s, "commit": "%s", "build": "%s", "stages": {"payments": ["decrypt", "authorize", "submit", "notify"], "operations": ["operations", "notify"]}}\n' \
        "$payments" "$operations" "$cost_batch" "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources || echo +changes)" "$configuration" >"$cost_dir/meta.json"
}

# cost_main: the whole --only cost run; its exit status is the bench's.
cost_main() {
    measure_cost
    local json="var/bench/cost-$(date -u +%Y-%m-%d).json" args=()
    mkdir -p var/bench
    [ "$update" = 1 ] && args+=(--doc docs/performance.md)
    cost_python report "$cost_dir" "$json" "${args[@]}"
    cp "$json" "$cost_dir/result.json"
    echo "   $json" >&2
    if [ "$update" = 1 ]; then
        cost_python update-baseline "$json" bench/cost-baseline.json
    elif [ "$check" = 1 ]; then
        cost_python check "$json" bench/cost-baseline.json
    fi
}
