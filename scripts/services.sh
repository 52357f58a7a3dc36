#!/usr/bin/env bash
# Starts and stops the servers the store tests talk to: PostgreSQL and Redis, on 127.0.0.1
# only, with throw-away data under $TINYAGENT_SERVICES_DIR (default /tmp/tinyagent-services).
#
#   bash scripts/services.sh start    # idempotent: servers already up are left as they are
#   bash scripts/services.sh stop     # stops them and deletes their data
#   bash scripts/services.sh status
#   eval "$(bash scripts/services.sh env)"   # exports TINYAGENT_TEST_POSTGRES_URL and _REDIS_URL
#
# Ports: TINYAGENT_PG_PORT (55432), TINYAGENT_REDIS_PORT (56379). The servers come from the
# Debian packages postgresql and redis-server (`bash scripts/setup.sh --test` installs them).
# Run as root, PostgreSQL runs as the `postgres` user (it refuses to run as root).
set -euo pipefail

DIR="${TINYAGENT_SERVICES_DIR:-/tmp/tinyagent-services}"
PG_PORT="${TINYAGENT_PG_PORT:-55432}"
REDIS_PORT="${TINYAGENT_REDIS_PORT:-56379}"
PG_DATA="$DIR/postgres"
REDIS_DIR="$DIR/redis"
PG_URL="postgres://postgres@127.0.0.1:$PG_PORT/tinyagent_test"
REDIS_URL="redis://127.0.0.1:$REDIS_PORT/"

pg_bin() {
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$found" ] || [ ! -x "$found/pg_ctl" ]; then
        echo "services: PostgreSQL is not installed; run: bash scripts/setup.sh --test" >&2
        exit 1
    fi
    echo "$found"
}

# Runs a command as the owner of the PostgreSQL data (postgres when we are root).
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_up() {
    local bin
    bin=$(pg_bin)
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" 2>/dev/null
}

redis_up() {
    command -v redis-cli >/dev/null 2>&1 &&
        [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = "PONG" ]
}

start_pg() {
    if pg_up; then
        echo "services: PostgreSQL already up on 127.0.0.1:$PG_PORT"
        return
    fi
    local bin
    bin=$(pg_bin)
    mkdir -p "$DIR"
    chmod 755 "$DIR"
    if [ ! -f "$PG_DATA/PG_VERSION" ]; then
        rm -rf "$PG_DATA"
        mkdir -p "$PG_DATA"
        if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$PG_DATA"; fi
        as_pg "$bin/initdb" --no-sync -A trust -U postgres -E UTF8 -D "$PG_DATA" >"$DIR/initdb.log" 2>&1 ||
            { cat "$DIR/initdb.log" >&2; exit 1; }
    fi
    # Throw-away data: no fsync. Enough connections for the tests' pools running at once.
    as_pg "$bin/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w -t 60 \
        -o "-h 127.0.0.1 -p $PG_PORT -k $PG_DATA -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" \
        start >/dev/null || { tail -n 20 "$PG_DATA/server.log" >&2; exit 1; }
    if ! as_pg "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = 'tinyagent_test'" | grep -q 1; then
        as_pg "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres tinyagent_test
    fi
    echo "services: PostgreSQL up on 127.0.0.1:$PG_PORT (data in $PG_DATA)"
}

start_redis() {
    if redis_up; then
        echo "services: Redis already up on 127.0.0.1:$REDIS_PORT"
        return
    fi
    if ! command -v redis-server >/dev/null 2>&1; then
        echo "services: Redis is not installed; run: bash scripts/setup.sh --test" >&2
        exit 1
    fi
    mkdir -p "$REDIS_DIR"
    redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$REDIS_DIR" \
        --save "" --appendonly no --daemonize yes \
        --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log"
    for _ in $(seq 1 100); do
        if redis_up; then
            echo "services: Redis up on 127.0.0.1:$REDIS_PORT (data in $REDIS_DIR)"
            return
        fi
        sleep 0.1
    done
    echo "services: Redis did not answer on 127.0.0.1:$REDIS_PORT:" >&2
    tail -n 20 "$REDIS_DIR/redis.log" >&2 || true
    exit 1
}

stop_all() {
    if [ -f "$PG_DATA/postmaster.pid" ]; then
        as_pg "$(pg_bin)/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null 2>&1 || true
    fi
    if [ -f "$REDIS_DIR/redis.pid" ]; then
        redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 ||
            kill "$(cat "$REDIS_DIR/redis.pid")" 2>/dev/null || true
    fi
    rm -rf "$DIR"
    echo "services: stopped; $DIR removed"
}

case "${1:-}" in
start)
    start_pg
    start_redis
    ;;
stop)
    stop_all
    ;;
status)
    if pg_up; then echo "PostgreSQL: up ($PG_URL)"; else echo "PostgreSQL: down"; fi
    if redis_up; then echo "Redis: up ($REDIS_URL)"; else echo "Redis: down"; fi
    ;;
env)
    echo "export TINYAGENT_TEST_POSTGRES_URL='$PG_URL'"
    echo "export TINYAGENT_TEST_REDIS_URL='$REDIS_URL'"
    ;;
*)
    echo "usage: bash scripts/services.sh start|stop|status|env" >&2
    exit 2
    ;;
esac
