#!/usr/bin/env bash
# What session takeover costs one router: broker A → at-least-once → broker B at QoS 1, through
# an instance with `share: true`. With the defaults (`takeover`) the instance's messages are
# confirmed to broker A once their first delivery to B has ended; with `clean_start: true`
# (`spooled`, the default before takeover) once they are spooled. Prints load.py's figures per
# run (alternating) and the medians with their ratio. Default broker settings but for
# persistence and queue limits, as the mqtt-bridge benchmark runs them.
#
# Environment (all optional): COUNT=100000 measured messages, WARMUP=500, SIZE=100, WINDOW=1000,
# RUNS=3, INFLIGHT=0 (broker A's max_inflight_messages; Mosquitto's own default is 20),
# SKIP_BUILD=1 (reuse .build-bench), KEEP_TMP=1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
COUNT=${COUNT:-100000}
WARMUP=${WARMUP:-500}
SIZE=${SIZE:-100}
WINDOW=${WINDOW:-1000}
RUNS=${RUNS:-3}
INFLIGHT=${INFLIGHT:-0}
log() { printf '[settle] %s\n' "$*" >&2; }

# shellcheck source=../lib/bench.sh
source "$here/../lib/bench.sh"
bench_release_build switchyard core mqtt
bench_tmp settle core mqtt
plugins="$tmp/plugins"
trap 'exit 130' INT
trap 'exit 143' TERM

for name in a b; do
    port=$(free_port)
    printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\nmax_inflight_messages %s\n' \
        "$port" "$INFLIGHT" >"$tmp/broker-$name.conf"
    mosquitto -c "$tmp/broker-$name.conf" >"$tmp/broker-$name.log" 2>&1 &
    pids+=($!)
    printf -v "port_$name" %s "$port"
done

results="$tmp/results.jsonl"
: >"$results"
measure() {  # measure MODE RUN
    local mode=$1 run=$2 dir="$tmp/$1-$2" clean=""
    mkdir -p "$dir"
    [[ $mode == spooled ]] && clean=", clean_start: true"
    cat >"$dir/routes.yaml" <<EOF2
plugins: { dir: "$plugins" }
instances:
  a: { plugin: mqtt, url: "mqtt://127.0.0.1:$port_a", share: true, subscriptions: [ { topic: "bench/#", qos: 1 } ]$clean }
  b: { plugin: mqtt, url: "mqtt://127.0.0.1:$port_b", publish: { qos: 1 } }
routes:
  - { name: a-to-b, from: a.messages, to: b.publish, delivery: at-least-once }
EOF2
    (cd "$dir" && exec "$release_dir/switchyard" run "$dir/routes.yaml" --spool "$dir/spool.db" >log 2>&1) &
    local router=$!
    pids+=($router)
    wait_until 20 "the router to connect to B" grep -q "connected to 127.0.0.1:$port_b" "$dir/log"
    wait_until 20 "the router to connect to A" grep -q "connected to 127.0.0.1:$port_a" "$dir/log"
    python3 "$here/../mqtt-bridge/load.py" --pub-port "$port_a" --sub-port "$port_b" --qos 1 --count "$COUNT" \
        --warmup "$WARMUP" --size "$SIZE" --window "$WINDOW" --timeout 120 --tag "$mode$run" | tail -1 |
        python3 -c 'import json, sys; r = json.load(sys.stdin); r["mode"] = sys.argv[1]; print(json.dumps(r))' "$mode" >>"$results"
    log "$mode $run: $(tail -1 "$results")"
    kill -TERM "$router"
    wait "$router" 2>/dev/null || true
}

log "$COUNT messages of $SIZE bytes at QoS 1, one router, $RUNS runs"
for ((run = 1; run <= RUNS; run++)); do
    for mode in spooled takeover; do measure "$mode" "$run"; done
done
python3 - "$results" <<'EOF2'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("| mode | msg/s per run | median msg/s | p50 latency ms (median) | lost |")
print("|---|---|---|---|---|")
medians = {}
for mode in ("spooled", "takeover"):
    mine = [r for r in rows if r["mode"] == mode]
    medians[mode] = statistics.median(r["msgs_per_s"] for r in mine)
    p50 = statistics.median(r["p50_ms"] for r in mine)
    per_run = ", ".join("%.0f" % r["msgs_per_s"] for r in mine)
    lost = sum(r["lost"] for r in mine)
    print(f"| {mode} | {per_run} | {medians[mode]:.0f} | {p50:.1f} | {lost} |")
print(f"takeover / spooled: throughput {medians['takeover'] / medians['spooled']:.2f}")
EOF2
