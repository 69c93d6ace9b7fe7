#!/usr/bin/env bash
# Kill one router for good (issue 36): two routers with `share: true` and one PostgreSQL store
# bridge broker A → at-least-once → broker B. A paced publisher sends COUNT QoS 1 messages at
# RATE per second; a third of the way through, router 1 is SIGKILLed and never restarted.
# Prints per run: messages broker A acknowledged, distinct messages at B, lost, duplicates, and
# how long after the kill router 2 began and finished taking router 1's session over.
#
# Modes (MODES, default "takeover dedupe old"):
#   takeover  the defaults: share: true and store.url, nothing else
#   dedupe    the same with `dedupe: { key: "{{body}}" }` on the route
#   old       the default before takeover (clean_start: true on the shared instance): the baseline
# Environment (all optional): COUNT=4000, RATE=800, RUNS=3, SKIP_BUILD=1 (reuse .build-bench),
# KEEP_TMP=1. Needs mosquitto, mosquitto-clients and postgresql (scripts/setup).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
COUNT=${COUNT:-4000}
RATE=${RATE:-800}
RUNS=${RUNS:-3}
log() { printf '[takeover] %s\n' "$*" >&2; }

# shellcheck source=../lib/bench.sh
source "$here/../lib/bench.sh"
bench_release_build switchyard core mqtt
bench_tmp takeover core mqtt
plugins="$tmp/plugins"
# PostgreSQL is this script's child: stopped (fast shutdown) before the wait for children.
bench_on_exit() { [[ -z ${pg_pid:-} ]] || kill -INT "$pg_pid" 2>/dev/null || true; }
trap 'exit 130' INT
trap 'exit 143' TERM

now() { date +%s.%N; }
at_least() {  # at_least N COMMAND...: the number COMMAND prints is at least N (read at each call)
    local n=$1
    shift
    [[ $("$@") -ge $n ]]
}

source "$repo/scripts/lib/private-postgres.sh"
pg_pid=""
start_private_postgres "$tmp/pg"

results="$tmp/results.txt"
: >"$results"
run_once() {  # run_once MODE RUN
    local mode=$1 run=$2 dir="$tmp/$1-$2" i port_a port_b extra="" clean=""
    mkdir -p "$dir"
    # Fresh brokers per run (Mosquitto's defaults but for persistence, and an unbounded queue:
    # its 1000-message default would drop what waits for a dead member, see docs/scale-out.md).
    for name in a b; do
        local port
        port=$(free_port)
        printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\nlog_type all\n' \
            "$port" >"$dir/broker-$name.conf"
        mosquitto -c "$dir/broker-$name.conf" >"$dir/broker-$name.log" 2>&1 &
        pids+=($!)
        printf -v "port_$name" %s "$port"
    done
    wait_until 10 "broker A" grep -q "running" "$dir/broker-a.log"
    wait_until 10 "broker B" grep -q "running" "$dir/broker-b.log"
    # A key of this run's own: the store outlives runs, and remembers what earlier ones delivered.
    [[ $mode == dedupe ]] && extra=", dedupe: { key: \"$mode-$run-{{body}}\", window: 1h }"
    [[ $mode == old ]] && clean=', clean_start: true'
    psql_url=$store_url
    cat >"$dir/routes.yaml" <<EOF2
plugins: { dir: "$plugins" }
store: { url: "\${STORE_URL}" }
instances:
  a: { plugin: mqtt, url: "mqtt://127.0.0.1:$port_a", share: true, subscriptions: [ { topic: "jobs/#", qos: 1 } ]$clean }
  b: { plugin: mqtt, url: "mqtt://127.0.0.1:$port_b", publish: { qos: 1 } }
routes:
  - { name: a-to-b, from: a.messages, to: b.publish, delivery: at-least-once$extra }
EOF2
    mosquitto_sub -h 127.0.0.1 -p "$port_b" -q 1 -t 'jobs/#' -F '%p' >"$dir/received.txt" 2>/dev/null &
    local sub=$!
    pids+=($sub)
    local routers=()
    for i in 1 2; do
        mkdir -p "$dir/r$i"
        (cd "$dir/r$i" && STORE_URL=$psql_url exec "$release_dir/switchyard" run "$dir/routes.yaml" --spool "$dir/r$i/spool.db" >log 2>&1) &
        routers+=($!)
        pids+=($!)
        wait_until 30 "router $i to subscribe" at_least "$i" grep -c "Sending SUBACK to switchyard-a-" "$dir/broker-a.log"
    done
    local victim
    victim=$(grep -o " as switchyard-a-[^ ]*" "$dir/broker-a.log" | head -1 | cut -c5-)
    # Notes when router 2 logs the takeover's start and end (the log has whole seconds only).
    (
        wait_until 300 "the kill" test -s "$dir/killed-at" || exit 0
        wait_until 60 "the takeover to begin" grep -q "MQTT session $victim lapsed" "$dir/r2/log" && now >"$dir/began-at"
        wait_until 120 "the takeover to end" grep -q "took over MQTT session $victim" "$dir/r2/log" && now >"$dir/finished-at"
    ) 2>/dev/null &
    local watcher=$!
    # The paced publisher: one line per message into mosquitto_pub -l; it kills router 1 once
    # a third is out and notes when.
    python3 - "$COUNT" "$RATE" "${routers[0]}" "$dir/killed-at" <<'EOF2' |
import os, signal, sys, time
count, rate, victim, mark = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
start = time.monotonic()
for n in range(1, count + 1):
    delay = start + n / rate - time.monotonic()
    if delay > 0: time.sleep(delay)
    sys.stdout.write(f"{n}\n"); sys.stdout.flush()
    if n == count // 3:
        os.kill(victim, signal.SIGKILL)
        open(mark, "w").write(f"{time.time():.3f}\n")
EOF2
        mosquitto_pub -h 127.0.0.1 -p "$port_a" -q 1 -t jobs/new -l
    local acked
    acked=$(grep -c "Sending PUBACK to auto-" "$dir/broker-a.log" || true)
    distinct_at_b() { sort -un "$dir/received.txt" | wc -l; }
    wait_until 120 "every message at broker B" at_least "$acked" distinct_at_b || true
    if [[ $mode != old ]]; then
        wait_until 60 "the takeover to finish" grep -q "took over MQTT session $victim" "$dir/r2/log" || true
    fi
    local killed began finished distinct total
    [[ $mode == old ]] && kill "$watcher" 2>/dev/null
    wait "$watcher" 2>/dev/null || true
    killed=$(cat "$dir/killed-at")
    began=$(cat "$dir/began-at" 2>/dev/null || true)
    finished=$(cat "$dir/finished-at" 2>/dev/null || true)
    distinct=$(sort -un "$dir/received.txt" | wc -l)
    total=$(wc -l <"$dir/received.txt")
    kill -TERM "${routers[1]}" 2>/dev/null || true
    wait "${routers[1]}" 2>/dev/null || true
    python3 - "$mode" "$run" "$acked" "$distinct" "$total" "$killed" "${began:-}" "${finished:-}" "$(grep -o "deduplicated=[0-9]*" "$dir/r2/log" | tail -1)" >>"$results" <<'EOF2'
import sys
mode, run, acked, distinct, total, killed, began, finished, dedup = sys.argv[1:10]
def since(stamp):
    return f"{float(stamp) - float(killed):.1f} s" if stamp else "–"
print(f"| {mode} | {run} | {acked} | {distinct} | {int(acked) - int(distinct)} | {int(total) - int(distinct)} | {since(began)} | {since(finished)} | {dedup.split('=')[-1] if dedup else '–'} |")
EOF2
    log "$(tail -1 "$results")"
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait "${pids[@]}" 2>/dev/null || true
    pids=()
}

log "$COUNT messages at $RATE/s, router 1 killed after $((COUNT / 3)); PostgreSQL :$pg_port; $RUNS runs"
for ((run = 1; run <= RUNS; run++)); do
    for mode in ${MODES:-takeover dedupe old}; do run_once "$mode" "$run"; done
done
echo "| mode | run | acknowledged by A | distinct at B | lost | duplicates | takeover began | takeover done | dropped by key |"
echo "|---|---|---|---|---|---|---|---|---|"
cat "$results"
