# One local PayPipe stack, shared by scripts/demo, scripts/bench and scripts/chaos (source it; bash only).
#
#   stack_init [debug|release]   builds (unless STACK_SKIP_BUILD=1), exports the sandbox environment (PAYPIPE_*),
#                                sets $BIN and $STACK_LOGS ($PAYPIPE_PG_DIR, $PAYPIPE_RMQ_DIR: the services' data,
#                                scripts/lib/service-dirs.sh)
#   stack_fresh_database NAME    drops and recreates database NAME and points PAYPIPE_DATABASE_URL at it
#   stack_setup                  migrate, sandbox PKI + data key + merchant documents (one per connector), merchant apply
#   stack_start_simulator [VAR=value …]   the gateway simulator (extra env: PAYPIPE_SIM_FAULT_RATE, …)
#   stack_start_receiver  [VAR=value …]   the verifying webhook receiver
#   stack_apple_token_api_pki, stack_apple_face_env   the simulator's Apple merchant-token API face: its TLS material
#                                and merchant identities (minted once), and the variables of the face and the puller
#   stack_start_apple_notifications [VAR=value …]   paypipe-apple-notifications (name apple-notifications)
#   stack_start_worker STAGE INSTANCE [VAR=value …]   paypipe-STAGE, logs to $STACK_LOGS/STAGE-INSTANCE.log
#   stack_kill NAME [SIGNAL]     signals one process started here (names: simulator, receiver, STAGE-INSTANCE)
#   stack_respawn NAME           starts NAME again exactly as it was first started (after stack_kill)
#   stack_running NAME           whether NAME is running
#   stack_wait_healthy           waits for every worker's /healthz
#   stack_stop_all               SIGTERM to everything started here, then waits
#
# Ports come from one base so several stacks can share a machine (PAYPIPE_PORT_BASE, default 9100):
# worker STAGE/INSTANCE serves metrics on base + 10*INSTANCE + (1 decrypt, 2 authorize, 3 submit, 4 notify, 5 operations);
# the simulator listens on base + 80 and the receiver on base + 90 (9180 and 9190 by default, the sandbox
# merchant's gateway and webhook URLs).
# The RabbitMQ and PostgreSQL ports are scripts/services' (PAYPIPE_AMQP_PORT, PAYPIPE_PG_PORT).

. "$(dirname "${BASH_SOURCE[0]}")/service-dirs.sh"

STACK_STAGES=(decrypt authorize submit notify operations)
declare -gA STACK_PIDS=()
# How each name was started (shell-quoted arguments of stack_spawn), so stack_respawn can start it again.
declare -gA STACK_SPAWN_ARGS=()

stack_stage_index() {
    case "$1" in decrypt) echo 1;; authorize) echo 2;; submit) echo 3;; notify) echo 4;; operations) echo 5;;
        *) echo "unknown stage '$1'" >&2; return 2;; esac
}

stack_init() {
    local configuration="${1:-debug}"
    STACK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    STACK_VAR="${PAYPIPE_VAR_DIR:-$STACK_ROOT/var}"
    STACK_LOGS="${STACK_LOGS:-$STACK_VAR/logs}"
    STACK_PORT_BASE="${PAYPIPE_PORT_BASE:-9100}"
    mkdir -p "$STACK_LOGS"
    if [ "${STACK_SKIP_BUILD:-0}" != 1 ]; then
        echo "== building ($configuration)"
        # The same flags as scripts/test, so running the stack after the tests (CI) reuses their build.
        (cd "$STACK_ROOT" && swift build -c "$configuration" -Xswiftc -warnings-as-errors 2>&1 | grep -E "error|warning: |Build complete" | tail -3)
    fi
    BIN="$(cd "$STACK_ROOT" && swift build -c "$configuration" -Xswiftc -warnings-as-errors --show-bin-path)"
    export PAYPIPE_ENV=sandbox
    export PAYPIPE_AMQP_URL="amqp://guest:guest@127.0.0.1:${PAYPIPE_AMQP_PORT:-5672}/%2f"
    export PAYPIPE_DATABASE_URL="postgresql://postgres@127.0.0.1:${PAYPIPE_PG_PORT:-5432}/${PAYPIPE_DATABASE_NAME:-paypipe}"
    export PAYPIPE_SANDBOX_DIR="$STACK_VAR/sandbox"
    export PAYPIPE_DATA_KEY_FILE="$PAYPIPE_SANDBOX_DIR/data.key"
    export PAYPIPE_APPLEPAY_TRUST_ROOT="$PAYPIPE_SANDBOX_DIR/pki/root.cert.pem"
}

stack_simulator_url() { echo "http://127.0.0.1:$((STACK_PORT_BASE + 80))"; }
stack_receiver_url() { echo "http://127.0.0.1:$((STACK_PORT_BASE + 90))/webhooks"; }

# Runs that check what the pipeline did (bench, chaos) start from an empty database of their own: payments left
# by earlier runs would otherwise be re-driven by the reconciler into this one (with card data sealed under an
# older sandbox data key). Call after scripts/services start.
stack_fresh_database() {
    local psql=(psql -h 127.0.0.1 -p "${PAYPIPE_PG_PORT:-5432}" -U postgres -X -q -v ON_ERROR_STOP=1 -d postgres)
    "${psql[@]}" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1" >/dev/null
    export PAYPIPE_DATABASE_NAME="$1"
    export PAYPIPE_DATABASE_URL="postgresql://postgres@127.0.0.1:${PAYPIPE_PG_PORT:-5432}/$1"
}

stack_setup() {
    echo "== migrate, sandbox PKI, merchant"
    "$BIN/paypipe" migrate
    "$BIN/paypipe" sandbox init --gateway-url "$(stack_simulator_url)" --webhook-url "$(stack_receiver_url)" >/dev/null
    "$BIN/paypipe" merchant apply --file "$PAYPIPE_SANDBOX_DIR/merchant.json" >/dev/null
    local document
    for document in merchant-jwt merchant-opp merchant-tappay; do
        "$BIN/paypipe" merchant apply --file "$PAYPIPE_SANDBOX_DIR/$document.json" >/dev/null
    done
    echo "   merchants sandbox-merchant (Trust Payments, webservices), sandbox-merchant-jwt (jwt), sandbox-merchant-opp (OPP)"
    echo "   and sandbox-merchant-tappay (TapPay) applied (paypipe merchant show ID)"
}

# stack_spawn NAME LOGFILE [VAR=value …] -- COMMAND …: starts one process in the background, remembered by name.
stack_spawn() {
    local name="$1" log="$2"; shift 2
    local assignments=()
    while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do assignments+=("$1"); shift; done
    shift
    (set -a; [ -f "$PAYPIPE_SANDBOX_DIR/services.env" ] && . "$PAYPIPE_SANDBOX_DIR/services.env"; set +a
     exec env "${assignments[@]}" "$@") >>"$log" 2>&1 &
    STACK_PIDS[$name]=$!
    STACK_SPAWN_ARGS[$name]="$(printf '%q ' "$log" "${assignments[@]}" -- "$@")"
}

stack_respawn() {
    local args="${STACK_SPAWN_ARGS[$1]:-}"
    [ -n "$args" ] || { echo "stack_respawn: '$1' was never started" >&2; return 2; }
    eval "stack_spawn \"\$1\" $args"
}

stack_running() {
    local pid="${STACK_PIDS[$1]:-}"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

stack_start_simulator() {
    stack_spawn simulator "$STACK_LOGS/gateway-sim.log" PAYPIPE_SIM_PORT=$((STACK_PORT_BASE + 80)) "$@" -- "$BIN/paypipe-gateway-sim"
}

# The Apple merchant-token API face of the simulator (docs/merchant-tokens.md "Sandbox"): its mutual-TLS port is
# base + 86, the notification endpoint (paypipe-apple-notifications) base + 87 and its metrics base + 88 (no worker instance uses a last digit above 5).
stack_apple_token_api_url() { echo "https://127.0.0.1:$((STACK_PORT_BASE + 86))"; }
stack_apple_notifications_url() { echo "http://127.0.0.1:$((STACK_PORT_BASE + 87))"; }

# The face's TLS material, minted once per sandbox directory with openssl as scripts/services mints the broker's (and
# again when the server certificate expires within a day): a private CA, the face's server certificate for
# 127.0.0.1, and one client identity per sandbox merchant that stores credentials, in the layout
# PAYPIPE_APPLE_IDENTITY_DIRECTORY reads (<merchant>/merchant-identifier, identity.cert.pem, identity.key.pem).
# Throw-away keys under var/ (mode 0700), never committed. Each merchant gets its own Apple merchant identifier.
stack_apple_token_api_pki() {
    local dir="$PAYPIPE_SANDBOX_DIR/apple-token-api" merchant
    if [ -f "$dir/server.pem" ] && openssl x509 -checkend 86400 -noout -in "$dir/server.pem" >/dev/null 2>&1; then return 0; fi
    rm -rf "$dir"; mkdir -p "$dir/identities"; chmod 700 "$dir"
    (
        cd "$dir"
        ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
        openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 825 -subj "/CN=PayPipe sandbox Apple token API CA"
        openssl req "${ec[@]}" -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
        printf 'subjectAltName=IP:127.0.0.1\n' > server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 825 -extfile server.ext
        for merchant in sandbox-merchant sandbox-merchant-opp; do
            mkdir -p "identities/$merchant"
            echo "merchant.dev.paypipe.$merchant" > "identities/$merchant/merchant-identifier"
            openssl req "${ec[@]}" -keyout "identities/$merchant/identity.key.pem" -out "identities/$merchant/identity.csr" \
                -subj "/UID=merchant.dev.paypipe.$merchant/CN=Merchant ID: merchant.dev.paypipe.$merchant"
            printf 'extendedKeyUsage=clientAuth\n' > client.ext
            openssl x509 -req -in "identities/$merchant/identity.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
                -out "identities/$merchant/identity.cert.pem" -days 825 -extfile client.ext
            rm -f "identities/$merchant/identity.csr"
        done
        rm -f server.csr server.ext client.ext
    ) >/dev/null 2>&1
}

# paypipe-apple-notifications on base + 87 (metrics and probes on base + 88), loopback sources only.
stack_start_apple_notifications() {
    stack_spawn apple-notifications "$STACK_LOGS/apple-notifications.log" PAYPIPE_APPLE_NOTIFICATIONS_HOST=127.0.0.1 \
        PAYPIPE_APPLE_NOTIFICATIONS_PORT=$((STACK_PORT_BASE + 87)) PAYPIPE_APPLE_NOTIFICATIONS_ALLOWED_NETWORKS=127.0.0.0/8 \
        PAYPIPE_METRICS_HOST=127.0.0.1 PAYPIPE_METRICS_PORT=$((STACK_PORT_BASE + 88)) "$@" -- "$BIN/paypipe-apple-notifications"
}

# The face's variables for the simulator, and the puller's for the operations worker (stack_start_worker operations
# 0 "${STACK_APPLE_PULLER_ENV[@]}").
stack_apple_face_env() {
    local dir="$PAYPIPE_SANDBOX_DIR/apple-token-api"
    STACK_APPLE_FACE_ENV=(PAYPIPE_SIM_APPLE_TOKEN_API_PORT=$((STACK_PORT_BASE + 86)) PAYPIPE_SIM_APPLE_TOKEN_API_CERT="$dir/server.pem"
        PAYPIPE_SIM_APPLE_TOKEN_API_KEY="$dir/server.key" PAYPIPE_SIM_APPLE_TOKEN_API_CLIENT_CA="$dir/ca.pem")
    STACK_APPLE_PULLER_ENV=(PAYPIPE_APPLE_IDENTITY_DIRECTORY="$dir/identities" PAYPIPE_APPLE_TOKEN_API_URL="$(stack_apple_token_api_url)"
        PAYPIPE_APPLE_TOKEN_API_CA_FILE="$dir/ca.pem")
}

stack_start_receiver() {
    stack_spawn receiver "$STACK_LOGS/webhook-receiver.log" PAYPIPE_RECEIVER_PORT=$((STACK_PORT_BASE + 90)) "$@" -- "$BIN/paypipe-webhook-receiver"
}

stack_metrics_port() { echo $((STACK_PORT_BASE + 10 * $2 + $(stack_stage_index "$1"))); }

stack_start_worker() {
    local stage="$1" instance="$2"; shift 2
    stack_spawn "$stage-$instance" "$STACK_LOGS/$stage-$instance.log" \
        PAYPIPE_METRICS_PORT="$(stack_metrics_port "$stage" "$instance")" "$@" -- "$BIN/paypipe-$stage"
}

stack_kill() {
    local pid="${STACK_PIDS[$1]:-}"
    [ -n "$pid" ] || return 0
    kill "-${2:-TERM}" "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset "STACK_PIDS[$1]"
}

stack_wait_healthy() {
    local name stage instance
    for name in "${!STACK_PIDS[@]}"; do
        case "$name" in simulator|receiver|prometheus) continue;;
            apple-notifications)
                for _ in $(seq 1 100); do
                    "$BIN/paypipe" healthcheck "http://127.0.0.1:$((STACK_PORT_BASE + 88))/healthz" >/dev/null 2>&1 && break
                    sleep 0.2
                done
                continue;;
        esac
        stage="${name%-*}"; instance="${name##*-}"
        for _ in $(seq 1 100); do
            "$BIN/paypipe" healthcheck "http://127.0.0.1:$(stack_metrics_port "$stage" "$instance")/healthz" >/dev/null 2>&1 && break
            sleep 0.2
        done
    done
}

stack_stop_all() {
    local name
    for name in "${!STACK_PIDS[@]}"; do kill -TERM "${STACK_PIDS[$name]}" 2>/dev/null || true; done
    for name in "${!STACK_PIDS[@]}"; do wait "${STACK_PIDS[$name]}" 2>/dev/null || true; done
    STACK_PIDS=()
}
