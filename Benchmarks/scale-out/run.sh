#!/usr/bin/env bash
# One router against two, on the same work: QoS 1 messages from broker A, shared-subscribed
# (`share: true`) and forwarded to broker B. With two routers, both run the same routes and
# share a PostgreSQL store (`store.url`), as docs/scale-out.md describes. Prints, per run and as
# medians: throughput (load.py, messages received at B per second), the CPU seconds the routers
# used, CPU per message, and the two-router/one-router ratios. Default settings throughout.
#
# Environment (all optional): COUNT=50000 measured messages, WARMUP=500, SIZE=100, WINDOW=1000
# (QoS 1 publishes load.py keeps unacknowledged), RUNS=3 (one, two, one, two, …),
# SKIP_BUILD=1 (reuse .build-bench), KEEP_TMP=1.
# Needs mosquitto, mosquitto-clients and postgresql (scripts/setup) and paho-mqtt is not used:
# load.py's raw client is.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
COUNT=${COUNT:-50000}
WARMUP=${WARMUP:-500}
SIZE=${SIZE:-100}
WINDOW=${WINDOW:-1000}
RUNS=${RUNS:-3}
PYTHON=${PYTHON:-python3}
pg_bin=/usr/lib/postgresql/15/bin
log() { printf '[scale-out] %s\n' "$*" >&2; }

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    log "building the router and plugins (release, --scratch-path .build-bench)"
    (cd "$repo" && swift build -c release --scratch-path .build-bench >&2)
fi
release_dir=$(cd "$repo" && swift build -c release --scratch-path .build-bench --show-bin-path)
tmp=$(mktemp -d /tmp/scale-out-bench.XXXXXX)
chmod 755 "$tmp"
plugins="$tmp/plugins"
mkdir -m 755 "$plugins"
install -m 0755 "$release_dir/libcore.so" "$release_dir/libmqtt.so" "$plugins/"

pids=()
routers=()
cleanup() {
    local status=$?
    for pid in "${routers[@]}" "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [[ ${KEEP_TMP:-0} == 1 || $status -ne 0 ]]; then log "temporary files kept in $tmp"; else rm -rf "$tmp"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() { "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() {  # wait_for SECONDS WHAT COMMAND...: COMMAND every 100 ms until it succeeds
    local seconds=$1 what=$2 i
    shift 2
    for ((i = 0; i < seconds * 10; i++)); do "$@" && return 0; sleep 0.1; done
    log "timed out waiting for $what"
    return 1
}
cpu_ticks() {  # user + system clock ticks of PID so far
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    stat=${stat##*) }
    read -r -a fields <<<"$stat"
    echo $((fields[11] + fields[12]))
}

# Brokers A and B, as the mqtt-bridge benchmark runs them (no queue or inflight limits).
for name in a b; do
    port=$(free_port)
    printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\nmax_inflight_messages 0\n' \
        "$port" >"$tmp/broker-$name.conf"
    mosquitto -c "$tmp/broker-$name.conf" >"$tmp/broker-$name.log" 2>&1 &
    pids+=($!)
    declare "port_$name=$port"
done

# PostgreSQL: a private cluster (as the postgres user when run as root).
as_postgres=()
if [[ $(id -u) -eq 0 ]]; then
    as_postgres=(setpriv --reuid postgres --regid postgres --clear-groups --)
    chown postgres: "$tmp"
fi
password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "$password" >"$tmp/pgpass"
[[ $(id -u) -eq 0 ]] && chown postgres: "$tmp/pgpass"
"${as_postgres[@]}" "$pg_bin/initdb" -D "$tmp/pg" -U switchyard --auth=scram-sha-256 --pwfile="$tmp/pgpass" \
    --no-sync --no-instructions >"$tmp/initdb.log"
pg_port=$(free_port)
"${as_postgres[@]}" "$pg_bin/postgres" -D "$tmp/pg" -p "$pg_port" -k "$tmp" -c listen_addresses=127.0.0.1 >"$tmp/postgres.log" 2>&1 &
pids+=($!)
wait_for 30 PostgreSQL grep -q "ready to accept connections" "$tmp/postgres.log"
store_url="postgres://switchyard:$password@127.0.0.1:$pg_port/switchyard?sslmode=disable"
PGPASSWORD=$password psql -X -q -h 127.0.0.1 -p "$pg_port" -U switchyard -d postgres -c "CREATE DATABASE switchyard"

routes() {  # routes FILE STORE(yes|no)
    {
        echo "plugins: { dir: \"$plugins\" }"
        [[ $2 == yes ]] && echo 'store: { url: "${STORE_URL}" }'
        cat <<EOF2
instances:
  a:
    plugin: mqtt
    url: "mqtt://127.0.0.1:$port_a"
    share: true
    subscriptions: [ { topic: "bench/#", qos: 1 } ]
  b:
    plugin: mqtt
    url: "mqtt://127.0.0.1:$port_b"
    share: true
    publish: { qos: 1 }
routes:
  - { name: a-to-b, from: a.messages, to: b.publish }
EOF2
    } >"$1"
}

results="$tmp/results.jsonl"
: >"$results"
measure() {  # measure MODE(one|two) RUN
    local mode=$1 run=$2 count=1 store=no i
    [[ $mode == two ]] && count=2 store=yes
    routes "$tmp/routes-$mode.yaml" "$store"
    routers=()
    for ((i = 1; i <= count; i++)); do
        mkdir -p "$tmp/$mode-$run-$i"
        (cd "$tmp/$mode-$run-$i" && STORE_URL=$store_url exec "$release_dir/switchyard" run "$tmp/routes-$mode.yaml" \
            --spool "$tmp/$mode-$run-$i/spool.db" >log 2>&1) &
        routers+=($!)
    done
    for ((i = 1; i <= count; i++)); do
        wait_for 20 "router $i to connect" grep -q "connected to 127.0.0.1:$port_b" "$tmp/$mode-$run-$i/log"
        wait_for 20 "router $i to subscribe" grep -q "connected to 127.0.0.1:$port_a" "$tmp/$mode-$run-$i/log"
    done
    local before=0 after=0 pid
    for pid in "${routers[@]}"; do before=$((before + $(cpu_ticks "$pid"))); done
    alive() { local pid; for pid in "${routers[@]}"; do kill -0 "$pid" 2>/dev/null || { log "a router died: see $tmp/$mode-$run-*/log"; return 1; }; done; }
    "$PYTHON" "$here/../mqtt-bridge/load.py" --pub-port "$port_a" --sub-port "$port_b" --qos 1 --count "$COUNT" \
        --warmup "$WARMUP" --size "$SIZE" --window "$WINDOW" --timeout 120 --tag "$mode" >"$tmp/load-$mode-$run.json"
    alive  # a router that died mid-run would read as 0 CPU
    for pid in "${routers[@]}"; do after=$((after + $(cpu_ticks "$pid"))); done
    for pid in "${routers[@]}"; do kill -TERM "$pid"; done
    wait "${routers[@]}" 2>/dev/null || true
    routers=()
    printf '{"mode": "%s", "run": %s, "routers": %s, "cpu_s": %s, "load": %s}\n' "$mode" "$run" "$count" \
        "$(((after - before) * 1000 / $(getconf CLK_TCK)))e-3" "$(tail -1 "$tmp/load-$mode-$run.json")" >>"$results"
    log "$(tail -1 "$results")"
}

log "brokers A :$port_a, B :$port_b; PostgreSQL :$pg_port; $COUNT messages of $SIZE bytes at QoS 1, $RUNS runs"
for ((run = 1; run <= RUNS; run++)); do
    measure one "$run"
    measure two "$run"
done
"$PYTHON" - "$results" "$COUNT" "$WARMUP" <<'EOF2'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
count, warmup = int(sys.argv[2]), int(sys.argv[3])
def stats(mode):
    picked = [r for r in rows if r["mode"] == mode]
    # CPU is measured over the whole load run: probe, warm-up and measured messages.
    return [(r["run"], r["load"]["msgs_per_s"], r["load"]["lost"], r["cpu_s"], r["cpu_s"] / (count + warmup) * 1e6) for r in picked]
one, two = stats("one"), stats("two")
print("| run | one router: msg/s, lost, CPU s, CPU µs/msg | two routers + store: msg/s, lost, CPU s, CPU µs/msg | ratios two/one: msg/s, CPU/msg |")
print("|---|---|---|---|")
for a, b in zip(one, two):
    print(f"| {a[0]} | {a[1]:.0f}, {a[2]}, {a[3]:.2f}, {a[4]:.1f} | {b[1]:.0f}, {b[2]}, {b[3]:.2f}, {b[4]:.1f} | {b[1]/a[1]:.2f}, {b[4]/a[4]:.2f} |")
m1 = [statistics.median(x[i] for x in one) for i in (1, 4)]
m2 = [statistics.median(x[i] for x in two) for i in (1, 4)]
print(f"| median | {m1[0]:.0f} msg/s, {m1[1]:.1f} µs/msg | {m2[0]:.0f} msg/s, {m2[1]:.1f} µs/msg | {m2[0]/m1[0]:.2f}, {m2[1]/m1[1]:.2f} |")
EOF2
