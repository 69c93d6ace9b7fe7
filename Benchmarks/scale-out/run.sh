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
    [[ -z ${pg_pid:-} ]] || kill -INT "$pg_pid" 2>/dev/null || true  # fast shutdown
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
# cpu_ticks and syscalls: what a process has used so far.
source "$here/../lib/proc.sh"

# Brokers A and B, as the mqtt-bridge benchmark runs them (no queue or inflight limits).
for name in a b; do
    port=$(free_port)
    printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\nmax_inflight_messages 0\n' \
        "$port" >"$tmp/broker-$name.conf"
    mosquitto -c "$tmp/broker-$name.conf" >"$tmp/broker-$name.log" 2>&1 &
    pids+=($!)
    declare "port_$name=$port"
done

# PostgreSQL: a private cluster (scripts/lib/private-postgres.sh).
source "$repo/scripts/lib/private-postgres.sh"
pg_pid=""
start_private_postgres "$tmp/pg"

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
measure() {  # measure MODE(one|one-store|two) RUN
    local mode=$1 run=$2 count=1 store=no i
    [[ $mode == two ]] && count=2 store=yes
    [[ $mode == one-store ]] && store=yes
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
    local before=0 after=0 pid calls
    local -a sums_before=(0 0 0) sums_after=(0 0 0)
    for pid in "${routers[@]}"; do
        before=$((before + $(cpu_ticks "$pid")))
        read -r -a calls <<<"$(syscalls "$pid")"
        for i in 0 1 2; do sums_before[i]=$((sums_before[i] + calls[i])); done
    done
    alive() { local pid; for pid in "${routers[@]}"; do kill -0 "$pid" 2>/dev/null || { log "a router died: see $tmp/$mode-$run-*/log"; return 1; }; done; }
    "$PYTHON" "$here/../mqtt-bridge/load.py" --pub-port "$port_a" --sub-port "$port_b" --qos 1 --count "$COUNT" \
        --warmup "$WARMUP" --size "$SIZE" --window "$WINDOW" --timeout 120 --tag "$mode" >"$tmp/load-$mode-$run.json"
    alive  # a router that died mid-run would read as 0 CPU
    for pid in "${routers[@]}"; do
        after=$((after + $(cpu_ticks "$pid")))
        read -r -a calls <<<"$(syscalls "$pid")"
        for i in 0 1 2; do sums_after[i]=$((sums_after[i] + calls[i])); done
    done
    for pid in "${routers[@]}"; do kill -TERM "$pid"; done
    wait "${routers[@]}" 2>/dev/null || true
    routers=()
    printf '{"mode": "%s", "run": %s, "routers": %s, "cpu_s": %s, "reads": %s, "writes": %s, "switches": %s, "load": %s}\n' \
        "$mode" "$run" "$count" "$(((after - before) * 1000 / $(getconf CLK_TCK)))e-3" \
        "$((sums_after[0] - sums_before[0]))" "$((sums_after[1] - sums_before[1]))" "$((sums_after[2] - sums_before[2]))" \
        "$(tail -1 "$tmp/load-$mode-$run.json")" >>"$results"
    log "$(tail -1 "$results")"
}

log "brokers A :$port_a, B :$port_b; PostgreSQL :$pg_port; $COUNT messages of $SIZE bytes at QoS 1, $RUNS runs"
for ((run = 1; run <= RUNS; run++)); do
    for mode in ${MODES:-one one-store two}; do measure "$mode" "$run"; done
done
"$PYTHON" - "$results" "$COUNT" "$WARMUP" <<'EOF2'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
total = int(sys.argv[2]) + int(sys.argv[3])  # CPU and syscalls cover warm-up and measured messages
modes = [m for m in ("one", "one-store", "two") if any(r["mode"] == m for r in rows)]
def figures(r):
    return {"msg/s": r["load"]["msgs_per_s"], "lost": r["load"]["lost"], "cpu µs/msg": r["cpu_s"] / total * 1e6,
            "syscalls/msg": (r["reads"] + r["writes"]) / total, "switches/1k msg": r["switches"] / total * 1000}
print("| run | " + " | ".join(f"{m}: msg/s, lost, CPU µs/msg, syscalls/msg, switches/1k" for m in modes) + " |")
print("|---|" + "---|" * len(modes))
runs = sorted({r["run"] for r in rows})
for run in runs:
    cells = []
    for m in modes:
        f = figures(next(r for r in rows if r["run"] == run and r["mode"] == m))
        cells.append(f"{f['msg/s']:.0f}, {f['lost']}, {f['cpu µs/msg']:.1f}, {f['syscalls/msg']:.2f}, {f['switches/1k msg']:.0f}")
    print(f"| {run} | " + " | ".join(cells) + " |")
medians = {m: {k: statistics.median(figures(r)[k] for r in rows if r["mode"] == m) for k in ("msg/s", "cpu µs/msg", "syscalls/msg", "switches/1k msg")} for m in modes}
print("| median | " + " | ".join(f"{medians[m]['msg/s']:.0f}, –, {medians[m]['cpu µs/msg']:.1f}, {medians[m]['syscalls/msg']:.2f}, {medians[m]['switches/1k msg']:.0f}" for m in modes) + " |")
for m in modes[1:]:
    print(f"{m} / one: throughput {medians[m]['msg/s'] / medians['one']['msg/s']:.2f}, CPU per message {medians[m]['cpu µs/msg'] / medians['one']['cpu µs/msg']:.2f}")
EOF2
