#!/usr/bin/env bash
# Qeo event topic ↔ Switchyard ↔ MQTT, beside a direct Cyclone DDS peer-to-peer baseline, in one
# run, COUNT ~100-byte ChatMessages each:
#   direct:     a Python cyclonedds writer → a Python cyclonedds reader (domain QEO_DOMAIN);
#   Qeo → MQTT: the same writer → the router's qeo instance → Mosquitto (QoS 0) → mosquitto_sub,
#               which stamps each arrival;
#   MQTT → Qeo: mosquitto_pub -l (QoS 0) → Mosquitto → the router → its qeo writer → the Python
#               reader.
# Each round runs the three paths one after another (so each ratio compares neighbours in time);
# prints msgs/s and p50/p99 latency (send time carried in the message) of each path per round,
# the router's CPU per message on each bridged path (user + system, /proc), and the medians of the
# rounds' ratios. The router runs with the plugins' defaults.
# Environment: COUNT=50000  RUNS=3  QEO_DOMAIN=140  SKIP_BUILD=1 (reuse the release build)
#   PERF_DIR=DIR (record `perf record -g` of the router during each bridged path of round 1 into
#   DIR/qeo-to-mqtt.perf.data and DIR/mqtt-to-qeo.perf.data; those figures are not comparable)
#   KEEP_TMP=1
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
COUNT=${COUNT:-50000}
RUNS=${RUNS:-3}
PERF_DIR=${PERF_DIR:-}
export QEO_DOMAIN=${QEO_DOMAIN:-140}
export CYCLONEDDS_URI='<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo" multicast="true"/></Interfaces></General></Domain></CycloneDDS>'
log() { printf '[qeo-mqtt] %s\n' "$*" >&2; }

python3 -c 'import cyclonedds' 2>/dev/null || { echo "python cyclonedds is missing: run scripts/setup" >&2; exit 1; }
# shellcheck source=../lib/bench.sh
source "$here/../lib/bench.sh"
bench_release_build switchyard qeo mqtt
bench_tmp qeo-mqtt qeo mqtt

mqtt_port=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\n' "$mqtt_port" >"$tmp/mosquitto.conf"
mosquitto -c "$tmp/mosquitto.conf" >"$tmp/mosquitto.log" 2>&1 &
pids+=($!)
sleep 0.5
cat >"$tmp/routes/main.yaml" <<YAML
instances:
  home:
    plugin: qeo
    qdm: "$repo/examples/qsimplechat-bridge/qdm/QSimpleChat_ChatMessage.xml"
    domain: $QEO_DOMAIN
    read: [org.qeo.sample.simplechat.ChatMessage]
    write: [org.qeo.sample.simplechat.ChatMessage]
  broker:
    plugin: mqtt
    url: "mqtt://127.0.0.1:$mqtt_port"
    client_id: qeo-bench
    subscriptions: [ { topic: qeo/chat/in, qos: 0 } ]
routes:
  - from: home.events
    type: mqtt.Publish
    map: { topic: qeo/chat, payload: '{"from": "{{body.from}}", "message": "{{body.message}}"}', qos: 0 }
    to: broker.publish
  - from: broker.messages
    type: qeo.org.qeo.sample.simplechat.ChatMessage
    map: { from: "{{body.from}}", message: "{{body.message}}" }
    to: home.write
YAML
"$release_dir/switchyard" run "$tmp/routes" --plugins "$tmp/plugins" >"$tmp/router.log" 2>&1 &
router=$!
pids+=($router)
wait_for "$tmp/router.log" "router started" 30

# cpu_ticks: the router's user + system CPU so far, in clock ticks (/proc/PID/stat fields 14, 15).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$router/stat"; }
# cpu_per_message TICKS_BEFORE: the router's CPU µs per message since TICKS_BEFORE.
cpu_per_message() { echo $((($(cpu_ticks) - $1) * 1000000 / $(getconf CLK_TCK) / COUNT)); }

# profile_start NAME / profile_stop: perf of the router around one bridged path (PERF_DIR, round 1).
profiler=
profile_start() {
    [[ -n $PERF_DIR && $round == 1 ]] || return 0
    mkdir -p "$PERF_DIR"
    perf record -g -e cpu-clock -F 999 -p "$router" -o "$PERF_DIR/$1.perf.data" >/dev/null 2>&1 &
    profiler=$!
    sleep 0.5
}
profile_stop() {
    [[ -n $profiler ]] || return 0
    kill -INT "$profiler" 2>/dev/null || true
    wait "$profiler" 2>/dev/null || true
    profiler=
}

for round in $(seq "$RUNS"); do
    # Direct: Python writer → Python reader.
    log "round $round/$RUNS direct: $COUNT messages, Python writer → Python reader"
    python3 "$here/qeo_bench.py" sub "$COUNT" 120 >"$tmp/direct.out" &
    reader=$!
    wait_for "$tmp/direct.out" ready 30
    python3 "$here/qeo_bench.py" pub "$COUNT"
    wait "$reader" || true
    direct=$(tail -1 "$tmp/direct.out")

    # Qeo → MQTT: Python writer → router (qeo) → Mosquitto → mosquitto_sub.
    mosquitto_sub -h 127.0.0.1 -p "$mqtt_port" -t qeo/chat -C "$COUNT" -W 180 -F '%U %p' >"$tmp/mqtt.out" 2>/dev/null &
    sub=$!
    sleep 0.5
    log "round $round/$RUNS Qeo → MQTT: $COUNT messages, Python writer → Switchyard → Mosquitto → mosquitto_sub"
    profile_start qeo-to-mqtt
    ticks=$(cpu_ticks)
    python3 "$here/qeo_bench.py" pub "$COUNT"
    wait "$sub" || true
    to_mqtt_cpu=$(cpu_per_message "$ticks")
    profile_stop
    bridged=$(python3 "$here/qeo_bench.py" mqtt-stats "$tmp/mqtt.out" | sed "s/}\$/, \"router_cpu_us_per_msg\": $to_mqtt_cpu}/")

    # MQTT → Qeo: mosquitto_pub → Mosquitto → router (mqtt → qeo write) → Python reader.
    log "round $round/$RUNS MQTT → Qeo: $COUNT messages, mosquitto_pub → Mosquitto → Switchyard → Python reader"
    python3 "$here/qeo_bench.py" sub "$COUNT" 120 >"$tmp/reverse.out" &
    reader=$!
    wait_for "$tmp/reverse.out" ready 30
    sleep 2 # discovery of the router's writer
    profile_start mqtt-to-qeo
    ticks=$(cpu_ticks)
    python3 "$here/qeo_bench.py" mqtt-lines "$COUNT" | mosquitto_pub -h 127.0.0.1 -p "$mqtt_port" -t qeo/chat/in -q 0 -l
    wait "$reader" || true
    to_qeo_cpu=$(cpu_per_message "$ticks")
    profile_stop
    reverse=$(tail -1 "$tmp/reverse.out" | sed "s/}\$/, \"router_cpu_us_per_msg\": $to_qeo_cpu}/")

    echo "round $round direct  (Cyclone peer to peer):         $direct"
    echo "round $round bridged (Qeo → Switchyard → MQTT QoS 0): $bridged"
    echo "round $round bridged (MQTT QoS 0 → Switchyard → Qeo): $reverse"
    printf '{"direct": %s, "to_mqtt": %s, "to_qeo": %s}\n' "$direct" "$bridged" "$reverse" >>"$tmp/rounds.jsonl"
done

echo "build: $(bench_build_stamp); $(nproc) cores; COUNT=$COUNT RUNS=$RUNS"
python3 - "$tmp/rounds.jsonl" <<'PY'
import json, statistics, sys
rounds = [json.loads(line) for line in open(sys.argv[1])]
def ratio(r, path):
    return r[path]["msgs_per_s"] / r["direct"]["msgs_per_s"]
for path, label in (("direct", "direct"), ("to_mqtt", "Qeo → MQTT"), ("to_qeo", "MQTT → Qeo")):
    median = lambda key: statistics.median(r[path][key] for r in rounds)
    lost = sum(rounds[0]["direct"]["count"] - r[path]["count"] for r in rounds)
    cpu = f"  router CPU {median('router_cpu_us_per_msg'):5.1f} µs/msg" if path != "direct" else ""
    print(f"median {label:11} msgs/s {median('msgs_per_s'):9.1f}  p50 {median('p50_ms'):9.3f} ms  p99 {median('p99_ms'):9.3f} ms  lost {lost}{cpu}")
for path, label in (("to_mqtt", "Qeo → MQTT"), ("to_qeo", "MQTT → Qeo")):
    ratios = [ratio(r, path) for r in rounds]
    print(f"ratio {label} / direct: median {statistics.median(ratios):.2f} (rounds: {', '.join(f'{x:.2f}' for x in ratios)}; target ≥ 0.8)")
PY
