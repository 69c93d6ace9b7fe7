# Sourced by examples/scale-out/run.sh and Benchmarks/scale-out/run.sh: a private PostgreSQL 15
# server (Debian's postgresql package) in a folder of the caller's, on a free loopback port,
# with SCRAM password authentication and a `switchyard` database.
#
#   start_private_postgres DIR
#
# sets pg_pid (stop it with `kill -INT`: PostgreSQL's fast shutdown), pg_port, pg_password and
# store_url (postgres://switchyard:PASSWORD@127.0.0.1:PORT/switchyard?sslmode=disable). As root
# the cluster belongs to the postgres user: PostgreSQL refuses to run as root. The password
# never appears on a command line (psql reads it from PGPASSWORD).

start_private_postgres() {
    local dir=$1 bin=/usr/lib/postgresql/15/bin i
    local as_postgres=()
    mkdir -p "$dir"
    if [[ $(id -u) -eq 0 ]]; then
        as_postgres=(setpriv --reuid postgres --regid postgres --clear-groups --)
        chown postgres: "$dir"
    fi
    pg_password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    (umask 077 && echo "$pg_password" >"$dir/pgpass")
    [[ $(id -u) -ne 0 ]] || chown postgres: "$dir/pgpass"
    "${as_postgres[@]}" "$bin/initdb" -D "$dir/data" -U switchyard --auth=scram-sha-256 --pwfile="$dir/pgpass" \
        --no-sync --no-instructions >"$dir/initdb.log"
    pg_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "${as_postgres[@]}" "$bin/postgres" -D "$dir/data" -p "$pg_port" -k "$dir" -c listen_addresses=127.0.0.1 \
        >"$dir/postgres.log" 2>&1 &
    pg_pid=$!
    for ((i = 0; i < 300; i++)); do
        grep -q "ready to accept connections" "$dir/postgres.log" && break
        kill -0 "$pg_pid" 2>/dev/null || { cat "$dir/postgres.log" >&2; return 1; }
        sleep 0.1
    done
    grep -q "ready to accept connections" "$dir/postgres.log" || { echo "PostgreSQL did not start" >&2; return 1; }
    PGPASSWORD=$pg_password psql -X -q -h 127.0.0.1 -p "$pg_port" -U switchyard -d postgres -c "CREATE DATABASE switchyard"
    store_url="postgres://switchyard:$pg_password@127.0.0.1:$pg_port/switchyard?sslmode=disable"
}
