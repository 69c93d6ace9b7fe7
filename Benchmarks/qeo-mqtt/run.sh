#!/usr/bin/env bash
# Qeo event topic ↔ Switchyard ↔ MQTT, beside a direct Cyclone DDS peer-to-peer baseline, in one
# run, COUNT ~100-byte ChatMessages each:
#   direct:     a Python cyclonedds writer → a Python cyclonedds reader (domain QEO_DOMAIN);
#   Qeo → MQTT: the same writer → the router's qeo instance → Mosquitto (QoS 0) → mosquitto_sub,
#               which stamps each arrival;
#   MQTT → Qeo: mosquitto_pub -l (QoS 0) → Mosquitto → the router → its qeo writer → the Python
#               reader.
# Prints msgs/s and p50/p99 latency (send time carried in the message) for each, and the ratios.
# Environment: COUNT=50000  QEO_DOMAIN=140  SKIP_BUILD=1 (reuse the release build)  KEEP_TMP=1
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
COUNT=${COUNT:-50000}
export QEO_DOMAIN=${QEO_DOMAIN:-140}
export CYCLONEDDS_URI='<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo" multicast="true"/></Interfaces></General></Domain></CycloneDDS>'
log() { printf '[qeo-mqtt] %s\n' "$*" >&2; }

python3 -c 'import cyclonedds' 2>/dev/null || { echo "python cyclonedds is missing: run scripts/setup" >&2; exit 1; }
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    log "building the router and plugins (release, --scratch-path .build-bench)"
    (cd "$repo" && swift build -c release --scratch-path .build-bench >&2)
fi
release_dir=$(cd "$repo" && swift build -c release --scratch-path .build-bench --show-bin-path)

# shellcheck source=../lib/bench.sh
source "$here/../lib/bench.sh"
bench_tmp qeo-mqtt qeo mqtt

# Direct: Python writer → Python reader.
log "direct: $COUNT messages, Python writer → Python reader"
python3 "$here/qeo_bench.py" sub "$COUNT" 120 >"$tmp/direct.out" &
pids+=($!)
wait_for "$tmp/direct.out" ready 30
python3 "$here/qeo_bench.py" pub "$COUNT"
wait "${pids[-1]}" || true
direct=$(tail -1 "$tmp/direct.out")

# Bridged: Python writer → router (qeo) → Mosquitto → mosquitto_sub.
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
pids+=($!)
wait_for "$tmp/router.log" "router started" 30
mosquitto_sub -h 127.0.0.1 -p "$mqtt_port" -t qeo/chat -C "$COUNT" -W 180 -F '%U %p' >"$tmp/mqtt.out" 2>/dev/null &
sub=$!
sleep 0.5
log "bridged: $COUNT messages, Python writer → Switchyard → Mosquitto → mosquitto_sub"
python3 "$here/qeo_bench.py" pub "$COUNT"
wait "$sub" || true
bridged=$(python3 "$here/qeo_bench.py" mqtt-stats "$tmp/mqtt.out")

# MQTT → Qeo: mosquitto_pub → Mosquitto → router (mqtt → qeo write) → Python reader.
log "MQTT → Qeo: $COUNT messages, mosquitto_pub → Mosquitto → Switchyard → Python reader"
python3 "$here/qeo_bench.py" sub "$COUNT" 120 >"$tmp/reverse.out" &
reader=$!
wait_for "$tmp/reverse.out" ready 30
sleep 2 # discovery of the router's writer
python3 "$here/qeo_bench.py" mqtt-lines "$COUNT" | mosquitto_pub -h 127.0.0.1 -p "$mqtt_port" -t qeo/chat/in -q 0 -l
wait "$reader" || true
reverse=$(tail -1 "$tmp/reverse.out")

echo "direct  (Cyclone peer to peer):         $direct"
echo "bridged (Qeo → Switchyard → MQTT QoS 0): $bridged"
echo "bridged (MQTT QoS 0 → Switchyard → Qeo): $reverse"
python3 - "$direct" "$bridged" "$reverse" <<'PY'
import json, sys
d, b, r = (json.loads(argument) for argument in sys.argv[1:])
print(f"ratio Qeo → MQTT / direct: {b['msgs_per_s'] / d['msgs_per_s']:.2f} (msgs/s), received {b['count']} of {d['count']}")
print(f"ratio MQTT → Qeo / direct: {r['msgs_per_s'] / d['msgs_per_s']:.2f} (msgs/s), received {r['count']} of {d['count']}")
PY
