#!/bin/sh
# Patroni's post_bootstrap (docker/patroni/patroni.yml): runs once, on the member that ran initdb, with a superuser
# connection URL as $1. PayPipe's role and database, as the single-node postgres service's POSTGRES_USER/_DB make them.
set -eu
psql "$1" -v ON_ERROR_STOP=1 -v password="$PAYPIPE_DB_PASSWORD" <<'SQL'
CREATE ROLE paypipe LOGIN PASSWORD :'password';
CREATE DATABASE paypipe OWNER paypipe;
SQL
