#!/bin/sh
# Profile `cluster`: the standby streams from the primary over the compose network as the paypipe user (scram).
set -e
echo "host replication paypipe all scram-sha-256" >> "$PGDATA/pg_hba.conf"
