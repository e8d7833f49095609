# Where the local PostgreSQL and RabbitMQ keep their data (source it; bash only). Sets:
#   PAYPIPE_VAR        the clone's var/ (PAYPIPE_VAR_DIR): logs, sandbox PKI, TLS material — everything but service data
#   PAYPIPE_PG_DIR     PostgreSQL: data/, socket/, tls/, postgres.log   (data/postmaster.pid is the server's pid)
#   PAYPIPE_RMQ_DIR    RabbitMQ: mnesia/, log/, rabbitmq.pid, its configuration and Erlang cookie
#
# As root, scripts/services runs PostgreSQL as the `postgres` user, which cannot reach a clone under a 0700 home
# (root's own, or anyone's). So service data lives outside the clone, in /var/tmp/paypipe-<uid>-<hash of the clone
# path> (one per clone and user; /var/tmp survives reboots, unlike /tmp), unless:
#   PAYPIPE_SERVICES_DIR=DIR   puts it in DIR/postgres and DIR/rabbitmq instead;
#   the clone already has var/postgres/data (or var/rabbitmq/mnesia) from before this layout: that is kept.
# `scripts/services dirs` prints the three paths.

paypipe_service_dirs() {
    local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
    PAYPIPE_VAR="${PAYPIPE_VAR_DIR:-$root/var}"
    local base
    if [ -n "${PAYPIPE_SERVICES_DIR:-}" ]; then
        base="$PAYPIPE_SERVICES_DIR"
    else
        base="/var/tmp/paypipe-$(id -u)-$(printf '%s' "$PAYPIPE_VAR" | sha256sum | cut -c1-12)"
    fi
    PAYPIPE_PG_DIR="$base/postgres"
    PAYPIPE_RMQ_DIR="$base/rabbitmq"
    if [ -z "${PAYPIPE_SERVICES_DIR:-}" ]; then
        [ -f "$PAYPIPE_VAR/postgres/data/PG_VERSION" ] && PAYPIPE_PG_DIR="$PAYPIPE_VAR/postgres"
        [ -d "$PAYPIPE_VAR/rabbitmq/mnesia" ] && PAYPIPE_RMQ_DIR="$PAYPIPE_VAR/rabbitmq"
    fi
    PAYPIPE_SERVICES_BASE="$base"
}

# Creates the base directory, refusing one that another user owns or that is a symbolic link (/var/tmp is shared and
# the name is predictable: someone else's directory there must never receive our database).
paypipe_service_dirs_create() {
    local dir
    for dir in "$PAYPIPE_PG_DIR" "$PAYPIPE_RMQ_DIR"; do
        case "$dir" in "$PAYPIPE_VAR"/*) mkdir -p "$PAYPIPE_VAR"; continue;; esac
        if [ -L "$PAYPIPE_SERVICES_BASE" ] || { [ -e "$PAYPIPE_SERVICES_BASE" ] && [ ! -O "$PAYPIPE_SERVICES_BASE" ]; }; then
            echo "services: $PAYPIPE_SERVICES_BASE is a link or belongs to another user; remove it or set PAYPIPE_SERVICES_DIR" >&2
            return 1
        fi
        # 0711: the postgres user (as root) may pass through to its own 0700 subdirectory, nobody may list it.
        mkdir -p -m 0711 "$PAYPIPE_SERVICES_BASE"
        return 0
    done
}

paypipe_service_dirs
