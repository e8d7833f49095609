#!/usr/bin/env bash
# `scripts/chaos cluster [short|full]` (docs/scaling.md, docs/chaos.md): the usual load against scripts/cluster (three
# RabbitMQ nodes, a PostgreSQL primary and its synchronous standby under Patroni, etcd as Patroni's store), the workers
# given every node and both servers (PAYPIPE_AMQP_URL as a list, PAYPIPE_DATABASE_URL multi-host with
# target_session_attrs=read-write), and four faults. Nothing here promotes, demotes or rewinds a server: Patroni does.
#   1. the RabbitMQ node leading most stage queues (rabbitmqctl list_queues name leader) SIGKILLed, restarted later;
#   2. the PostgreSQL primary's postmaster SIGKILLed (a crash under a running Patroni): Patroni fails over to the
#      synchronous standby at once (primary_start_timeout 0) and re-joins the old primary as its standby;
#   3. the new primary's machine lost (its Patroni and its PostgreSQL SIGKILLed): Patroni on the standby takes the
#      leader key when it expires (ttl) and promotes; the lost member's Patroni is started again and re-joins it
#      (pg_rewind);
#   4. the standby's machine lost alone: commits wait for it until Patroni on the primary drops it from
#      synchronous_standby_names; it is started again and becomes the synchronous standby.
# The time to recover from each fault is measured with a probe: CHAOS_PROBE (5) jobs published right after the fault
# (for 4: when the standby is back); recovered when all of them are done. Each must be under CHAOS_RECOVERY_LIMIT
# (120 s) with the documented heartbeat and backoff defaults (a probe over it is re-measured once with a fresh probe),
# or the run fails. Then the checks of scripts/chaos
# (scripts/lib/chaos_check.py: 0 lost, 0 double charges, every payment terminal, webhooks, dead letters) and those of
# the adversarial mode (scripts/lib/chaos_adversarial_check.py: the gateway's ledger against every payment).
#
#   short: 3,000 jobs (15 waves, so every fault hits work in flight), full: 6,000.  CHAOS_JOBS, CHAOS_TIMEOUT override; PAYPIPE_CLUSTER_PORT_BASE moves the cluster.
# Exit 0 only if every check passed and every recovery was in time; 2 if the pipeline did not converge.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
MODE="${1:-short}"
case "$MODE" in
    short) JOBS="${CHAOS_JOBS:-3000}"; TIMEOUT="${CHAOS_TIMEOUT:-600}" ;;
    full)  JOBS="${CHAOS_JOBS:-6000}"; TIMEOUT="${CHAOS_TIMEOUT:-1800}" ;;
    *) echo "usage: scripts/chaos cluster [short|full]" >&2; exit 64 ;;
esac
LIMIT="${CHAOS_RECOVERY_LIMIT:-120}"
PREFIX="cluster-$(date +%s)"
TRACE_QUEUE=""
RESULTS_QUEUE="paypipe-chaos.results"

. scripts/lib/stack.sh
# Each run starts from an empty broker: a message an earlier run left behind (a retry copy RabbitMQ never forwarded,
# see release_stalled below, which a purge does not remove) must not reach this run's workers.
scripts/cluster rabbit-reset >/dev/null
# A start that fails half-way (a port already taken) must not leave its nodes running: the EXIT trap below is not set yet.
scripts/cluster start || { scripts/cluster stop >/dev/null 2>&1 || true; exit 1; }
stack_init "${CHAOS_CONFIGURATION:-debug}"
eval "$(scripts/cluster env)"
CLUSTER_AMQP_URL="$PAYPIPE_AMQP_URL" CLUSTER_DATABASE_URL="$PAYPIPE_DATABASE_URL"
# The run's own database, created on the current primary, reached through both servers.
PRIMARY_PORT="$(scripts/cluster pg-port "$(scripts/cluster pg-primary)")"
PAYPIPE_PG_PORT="$PRIMARY_PORT" stack_fresh_database paypipe_chaos
export PAYPIPE_DATABASE_URL="${CLUSTER_DATABASE_URL/\/paypipe\?//paypipe_chaos?}"
# A synchronous commit waits for the standby's flush, not its replay: until the new database is replayed there,
# connecting to the standby fails at start-up (FATAL: database does not exist), and libpq tries no further host.
STANDBY_PORT="$(scripts/cluster pg-port "$(scripts/cluster pg-standby)")"
until psql -h 127.0.0.1 -p "$STANDBY_PORT" -U postgres -d paypipe_chaos -Atqc "SELECT 1" >/dev/null 2>&1; do sleep 0.2; done
export PAYPIPE_AMQP_URL="$CLUSTER_AMQP_URL"
stack_setup
RUN_DIR="$STACK_VAR/chaos/$PREFIX"
mkdir -p "$RUN_DIR" && chmod 700 "$STACK_VAR/chaos" "$RUN_DIR"

# rabbitmqctl and the Python helpers talk to one node that is up (the killed one is avoided).
RMQ_NODE=0
rmq() { scripts/cluster rabbitmqctl "$RMQ_NODE" "$@"; }
node_url() { echo "$CLUSTER_AMQP_URL" | tr ',' '\n' | sed -n "$(( $1 + 1 ))p"; }
CAPTURE_URL="$(node_url "$RMQ_NODE")"

declare -A WATCH_PID=()   # the watchers of Patroni's promotions and re-joins (below)
cleanup() {
    trap - EXIT INT TERM
    stack_stop_all
    kill "${WATCH_PID[@]}" 2>/dev/null || true
    rmq delete_queue "$RESULTS_QUEUE" >/dev/null 2>&1 || true
    rm -f "$RUN_DIR/card-secrets.jsonl"
    [ "${PAYPIPE_CHAOS_KEEP:-0}" = 1 ] || scripts/cluster stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

. scripts/lib/chaos_load.sh
chaos_defaults
echo "== cluster mode: $PAYPIPE_AMQP_URL"
echo "   database: $PAYPIPE_DATABASE_URL"
# shellcheck disable=SC2046
python3 scripts/lib/capture_messages.py purge "$CAPTURE_URL" $(rmq list_queues -q --no-table-headers name | grep '^paypipe\.' || true)
WORKERS=(decrypt-0 decrypt-1 authorize-0 submit-0 submit-1 notify-0 operations-0)
chaos_start_load
waves=$(( (JOBS + WAVE - 1) / WAVE ))
started=$(date +%s)
log() { printf '   [%4ss] %s\n' "$(( $(date +%s) - started ))" "$*"; }

# Publishes probe $1 and waits (publishing the remaining waves meanwhile) until it is done or $2 + LIMIT + 60 s.
probe_done() {
    local probe="$1" since="$2" want
    chaos_publish_wave "$probe"
    want=$(grep -E "\"jobId\": ?\"$probe-" "$RUN_DIR/jobs.jsonl" | grep -vcE '"kind": ?"(unknownMerchant|malformed)"' || true)
    while [ "$(chaos_done_count "$probe")" -lt "$want" ]; do
        keep_publishing
        if [ $(( $(date +%s) - since )) -gt $(( LIMIT + 60 )) ]; then break; fi
        sleep 1
    done
}

# Measures the recovery from fault $1 (at $2) with a probe. A probe over LIMIT is re-measured once with a fresh probe
# before the run fails: one probe message can sit in a retry queue through the broker's own recovery (RabbitMQ's
# dead-lettering after a node loss) while the stages already run again; the first time is reported either way, and
# the first probe's payments are still checked like every job (nothing lost, nothing charged twice).
RECOVERY=() status=0
recover() {
    local name="$1" since="$2" probe="$PREFIX-probe${#RECOVERY[@]}"
    probe_done "$probe" "$since"
    local seconds=$(( $(date +%s) - since )) verdict=ok
    if [ "$seconds" -gt "$LIMIT" ]; then
        log "probe of '$name' took ${seconds}s, over ${LIMIT}s: re-measuring with a fresh probe"
        local again; again=$(date +%s)
        probe_done "$probe-again" "$again"
        local second=$(( $(date +%s) - again ))
        if [ "$second" -le "$LIMIT" ]; then verdict="ok (first probe ${seconds}s, a fresh one ${second}s)"
        else verdict="FAIL (a fresh probe too: ${second}s)"; status=1; fi
    fi
    RECOVERY+=("$(printf '%-62s %5ss  %s' "$name" "$seconds" "$verdict")")
    log "recovered from '$name' in ${seconds}s ($verdict)"
}
next_publish=$started
keep_publishing() {
    if [ "$wave" -lt "$waves" ] && [ "$(date +%s)" -ge "$next_publish" ]; then
        chaos_publish_wave; next_publish=$(( $(date +%s) + WAVE_INTERVAL ))
    fi
}
publish_until() {  # keeps the waves coming until $1 of them are out
    while [ "$wave" -lt "$1" ]; do keep_publishing; sleep 1; done
}

echo "== publishing $JOBS sample jobs ($PREFIX-*) in $waves waves of $WAVE, one every ${WAVE_INTERVAL}s; faults at 20%, 40%, 60% and 80% of the waves"
publish_until $(( waves / 5 ))
leader="$(scripts/cluster rabbit-leader-node)"
RMQ_NODE=$(( (leader + 1) % 3 )); CAPTURE_URL="$(node_url "$RMQ_NODE")"
log "SIGKILL RabbitMQ node $leader (leads most stage queues; $(chaos_done_count) done)"
fault=$(date +%s); scripts/cluster rabbit-kill "$leader"
recover "RabbitMQ node $leader (stage-queue leader) killed" "$fault"
scripts/cluster rabbit-start "$leader" >/dev/null; log "RabbitMQ node $leader restarted"
# CHAOS_LOSE_DLX_WORKERS=1 makes RabbitMQ's dead-letter-worker loss happen on purpose (every node's workers stopped
# through their supervisor, so none is restarted), to exercise the remedy above: expired retry copies then stay until
# their tier's leader changes.
if [ "${CHAOS_LOSE_DLX_WORKERS:-0}" = 1 ]; then
    for n in 0 1 2; do
        scripts/cluster rabbitmqctl "$n" eval \
            '[supervisor:terminate_child(rabbit_fifo_dlx_sup, P) || {_, P, _, _} <- supervisor:which_children(rabbit_fifo_dlx_sup)].' >/dev/null
    done
    log "every node's dead-letter workers stopped (CHAOS_LOSE_DLX_WORKERS=1)"
fi

# Patroni's promotions and re-joins, watched (not made) here: each watcher polls (every 0.5 s, up to 600 s) in the
# background from the fault on, so a measurement never waits for the probe or the other way round.
watch_until() {  # NAME SINCE COMMAND… → `watched NAME` sets WATCHED: seconds from SINCE until COMMAND succeeded, or "none"
    local name="$1" since="$2"; shift 2
    ( for _ in $(seq 1 1200); do
          if "$@" >/dev/null 2>&1; then echo "$(( $(date +%s) - since ))s" > "$RUN_DIR/watch-$name"; exit 0; fi
          sleep 0.5
      done; echo none > "$RUN_DIR/watch-$name" ) &
    WATCH_PID[$name]=$!
}
# Sets WATCHED to watcher NAME's result once it ended (never in a $(…): a subshell cannot wait for the watcher).
watched() { wait "${WATCH_PID[$1]}" 2>/dev/null || true; WATCHED="$(cat "$RUN_DIR/watch-$1" 2>/dev/null || echo none)"; }
unwatch() { kill "${WATCH_PID[$1]}" 2>/dev/null || true; }
primary_is() { [ "$(scripts/cluster pg-primary)" = "$1" ]; }
sync_standby_is() { [ "$(scripts/cluster pg-sync-standby)" = "$1" ]; }
rewinds() { grep -c 'pg_rewind exit code=0' "$(scripts/cluster patroni-log "$1")" 2>/dev/null || true; }
# Waits (bounded, 300 s) until Patroni has re-joined member $1 as the synchronous standby; logs when it did (watched
# since the fault or $4, name $2) and whether it rewound (pg_rewind runs since $3).
await_rejoin() {
    local s="$1" name="$2" before="$3" since="${4:-the fault}" how
    if scripts/cluster pg-rejoin "$s" 300; then
        [ "$(rewinds "$s")" -gt "$before" ] && how="pg_rewind" || how="no rewind needed"
        watched "$name"; log "Patroni re-joined $s as the synchronous standby $WATCHED after $since ($how)"
    else
        unwatch "$name"; log "Patroni did not re-join $s within 300 s"; status=1
    fi
}

publish_until $(( waves * 40 / 100 ))
primary="$(scripts/cluster pg-primary)"; rewound=$(rewinds "$primary")
log "SIGKILL the PostgreSQL primary $primary's postmaster; Patroni is left to fail over ($(chaos_done_count) done)"
other="$(scripts/cluster pg-standby)"
fault=$(date +%s); scripts/cluster pg-kill "$primary"
watch_until promote1 "$fault" primary_is "$other"; watch_until rejoin1 "$fault" sync_standby_is "$primary"
recover "PostgreSQL primary $primary crashed, Patroni failed over" "$fault"
watched promote1; log "Patroni promoted $other $WATCHED after the crash"
await_rejoin "$primary" rejoin1 "$rewound"

publish_until $(( waves * 60 / 100 ))
primary="$(scripts/cluster pg-primary)"; rewound=$(rewinds "$primary")
log "SIGKILL the PostgreSQL primary $primary's Patroni and postmaster (its machine lost) ($(chaos_done_count) done)"
other="$(scripts/cluster pg-standby)"
fault=$(date +%s); scripts/cluster pg-node-kill "$primary"
watch_until promote2 "$fault" primary_is "$other"; watch_until rejoin2 "$fault" sync_standby_is "$primary"
recover "PostgreSQL primary $primary's Patroni and server killed, Patroni failed over" "$fault"
watched promote2; log "Patroni promoted $other $WATCHED after the loss (leader key expired)"
scripts/cluster pg-start "$primary"; log "Patroni on $primary started again"
await_rejoin "$primary" rejoin2 "$rewound"

publish_until $(( waves * 80 / 100 ))
standby="$(scripts/cluster pg-standby)"
log "SIGKILL the PostgreSQL standby $standby's Patroni and server alone ($(chaos_done_count) done)"
scripts/cluster pg-node-kill "$standby"
before=$(chaos_done_count); sleep "${CHAOS_STANDBY_OUTAGE:-10}"; after=$(chaos_done_count)
log "while the standby was down: $before done before, $after after ${CHAOS_STANDBY_OUTAGE:-10}s (synchronous_standby_names on the primary: '$(scripts/cluster pg-sync-names)')"
rewound=$(rewinds "$standby")
scripts/cluster pg-start "$standby"; back=$(date +%s); log "Patroni on standby $standby started again"
watch_until rejoin3 "$back" sync_standby_is "$standby"
recover "PostgreSQL standby $standby lost alone (from its return)" "$back"
await_rejoin "$standby" rejoin3 "$rewound" "its return"

# RabbitMQ before 3.10.20 (Debian 12 ships 3.10.8) can lose a quorum queue's at-least-once dead-letter worker when the
# queue's leader moves (fixed upstream by rabbitmq-server commits 08fd7a71dd and d7adbc6c46): expired retry copies then
# stay in the retry tier (dead-lettered, unconfirmed), untouched by a purge. The pipeline does not wait for them (the
# reconcilers re-drive each payment from its row), but they are real deliveries that must be seen handled. Once every
# job is done and tiers have held such copies for STALL_GRACE seconds, the remedy of docs/operations.md (alert
# PayPipeRetryTierStalled) is applied: each node leading one of them is restarted, and the new leader starts a new
# dead-letter worker. That worker forwards the copies at once, or after its publisher-confirm timeout (RabbitMQ's
# dead_letter_worker_publisher_confirm_timeout, 180 s) when its first forward went to the restarted node, so the next
# remedy waits STALL_SETTLE seconds. The copies then reach their stage as the duplicates they are, and the checks below
# include them (no double charge, no unexpected dead letter, every queue drained).
STALL_GRACE="${CHAOS_STALL_GRACE:-30}" STALL_SETTLE="${CHAOS_STALL_SETTLE:-240}" STALLS=() stalled_since="" released_at=0
# A quorum queue's messages less its ready and unacknowledged ones are its dead-lettered, unforwarded ones
# (rabbitmqctl 3.10 does not list messages_dlx itself).
stalled_tiers() {
    rmq list_queues -q --no-table-headers name messages messages_ready messages_unacknowledged 2>/dev/null \
        | awk '$1 ~ /^paypipe\..*\.retry\./ && $2 - $3 - $4 > 0 { print $1 "=" $2 - $3 - $4 }'
}
release_stalled() {
    local tier node nodes=()
    for tier in $1; do
        node="$(scripts/cluster rabbit-leader-node "${tier%%=*}")"
        [ -n "$node" ] && [[ " ${nodes[*]} " != *" $node "* ]] && nodes+=("$node")
    done
    log "RabbitMQ did not forward the expired copies in $(echo $1) (their dead-letter worker is lost): restarting node(s) ${nodes[*]}, which lead them"
    for node in "${nodes[@]}"; do
        if [ "$node" = "$RMQ_NODE" ]; then RMQ_NODE=$(( (node + 1) % 3 )); CAPTURE_URL="$(node_url "$RMQ_NODE")"; fi
        scripts/cluster rabbit-kill "$node"; scripts/cluster rabbit-start "$node" >/dev/null
    done
    STALLS+=("$(echo $1) (restarted node(s) ${nodes[*]})")
}

publish_until "$waves"
log "all $published jobs published; converging (limit ${TIMEOUT}s)"
converged=0
while [ $(( $(date +%s) - started )) -lt "$TIMEOUT" ]; do
    if [ "$(chaos_done_count)" -ge "$(chaos_expected_so_far)" ]; then
        [ "$(chaos_queued)" = 0 ] && { converged=1; break; }
        tiers="$(stalled_tiers)"
        if [ -z "$tiers" ]; then stalled_since=""
        elif [ -z "$stalled_since" ]; then stalled_since=$(date +%s)
        elif [ $(( $(date +%s) - stalled_since )) -ge "$STALL_GRACE" ] && [ $(( $(date +%s) - released_at )) -ge "$STALL_SETTLE" ] \
                && [ "${#STALLS[@]}" -lt 3 ]; then
            release_stalled "$tiers"; stalled_since="" released_at=$(date +%s)
        fi
    fi
    sleep 2
done
elapsed=$(( $(date +%s) - started ))
chaos_checks "$elapsed" "cluster: RabbitMQ leader node killed, Patroni failovers (PostgreSQL crash, machine loss), standby outage" || status=1
# And the adversarial run's assertions, on the gateway's own ledger: at most one AUTH per payment, each for that
# payment's amount and card, and every final status what the gateway processed.
python3 scripts/lib/chaos_adversarial_check.py --prefix "$PREFIX" --jobs "$RUN_DIR/jobs.jsonl" --cards "$RUN_DIR/card-secrets.jsonl" \
    --simulator "$(stack_simulator_url)" --seed none --elapsed "$elapsed" || status=1
echo "== time to recover (limit ${LIMIT}s each)"
printf '   %s\n' "${RECOVERY[@]}"
echo "== retry tiers RabbitMQ stalled (released by restarting their leader node): ${#STALLS[@]}"
[ "${#STALLS[@]}" = 0 ] || printf '   %s\n' "${STALLS[@]}"
[ "$converged" = 1 ] || status=2
echo "chaos cluster ($MODE, $JOBS jobs + probes): elapsed ${elapsed}s, exit $status"
exit "$status"
