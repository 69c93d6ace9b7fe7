#!/usr/bin/env bash
# Broker A -> broker B forwarding of small MQTT messages, through Switchyard and through
# Mosquitto's built-in bridge, on the same two Mosquitto brokers (loopback only).
# See README.md next to this script. Run from anywhere; needs root for apt-get only when
# mosquitto is missing.
#
# Environment (all optional):
#   COUNT=50000      measured messages per run        WARMUP=500   warm-up messages per run
#   SIZE=100         payload bytes                     WINDOW=1000  QoS 1 publisher window
#   QOS_LEVELS="0 1" which QoS levels to run
#   PATHS="switchyard mosquitto-bridge"   add `direct` for a reference row: publisher and
#                    subscriber both on broker B, nothing forwarded (the clients' and one
#                    broker's ceiling); add `relay` (QoS 0 only) for relay.py, the least a
#                    separate bridge process can do (the ceiling of any out-of-process bridge)
#   CLIENT=raw       load.py client: raw (default) or paho (see load.py: paho is slower than the paths)
#   SY_INFLIGHT=1000 Switchyard b.inflight (QoS >= 1 publishes awaiting PUBACK)
#   SY_MAX_PENDING=10000 Switchyard b.max_pending (the plugin's default): above it the link
#                    answers "full" and the router holds back (backpressure, nothing lost)
#   SY_QUEUE=1024    route queue size (on_full: block)
#   SKIP_BUILD=1     reuse .build-bench as is
#   PERF_DIR=DIR     record `perf record -g` of the router during each Switchyard run into DIR
#   KEEP_TMP=1       keep the temporary directory (configs, logs, raw results)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

COUNT=${COUNT:-50000}
WARMUP=${WARMUP:-500}
SIZE=${SIZE:-100}
WINDOW=${WINDOW:-1000}
QOS_LEVELS=${QOS_LEVELS:-"0 1"}
PATHS=${PATHS:-"switchyard mosquitto-bridge"}
SY_INFLIGHT=${SY_INFLIGHT:-1000}
SY_MAX_PENDING=${SY_MAX_PENDING:-10000}
CLIENT=${CLIENT:-raw}
SY_QUEUE=${SY_QUEUE:-1024}
LOAD_TIMEOUT=${LOAD_TIMEOUT:-90}

log() { printf '[mqtt-bridge] %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------------------------
# Prerequisites
# ---------------------------------------------------------------------------------------------
have() { command -v "$1" >/dev/null 2>&1 || [[ -x /usr/sbin/$1 || -x /usr/bin/$1 ]]; }
if ! have mosquitto || ! have mosquitto_pub; then
    if [[ $(id -u) -ne 0 ]]; then
        echo "mosquitto is missing: run 'apt-get install -y mosquitto mosquitto-clients' as root" >&2
        exit 1
    fi
    log "installing mosquitto and mosquitto-clients"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto mosquitto-clients >/dev/null
fi
MOSQUITTO=$(command -v mosquitto || echo /usr/sbin/mosquitto)

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import paho.mqtt, sys; sys.exit(0 if int(paho.mqtt.__version__.split(".")[0]) >= 2 else 1)' 2>/dev/null; then
    log "installing paho-mqtt (2.x) with pip"
    "$PYTHON" -m pip install --quiet --disable-pip-version-check 'paho-mqtt>=2,<3'
fi

# ---------------------------------------------------------------------------------------------
# Build (release, own scratch path) and a private plugin folder
# ---------------------------------------------------------------------------------------------
build_dir="$repo/.build-bench"
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    log "building the router and plugins (release, --scratch-path .build-bench)"
    (cd "$repo" && swift build -c release --scratch-path .build-bench >&2)
fi
release_dir=$(cd "$repo" && swift build -c release --scratch-path .build-bench --show-bin-path)
for file in switchyard libcore.so libmqtt.so; do
    [[ -f $release_dir/$file ]] || { echo "missing $release_dir/$file (build failed?)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/mqtt-bridge-bench.XXXXXX)
chmod 755 "$tmp"
plugins="$tmp/plugins"
mkdir -m 755 "$plugins"
install -m 0755 "$release_dir/libcore.so" "$release_dir/libmqtt.so" "$plugins/"
router_bin="$release_dir/switchyard"

# ---------------------------------------------------------------------------------------------
# Process bookkeeping: everything started here is killed on exit
# ---------------------------------------------------------------------------------------------
broker_a_pid="" broker_b_pid="" router_pid="" perf_pid="" load_pid="" relay_pid=""

stop_pid() {  # stop_pid PID [grace-seconds]: SIGTERM, wait, then SIGKILL
    local pid=$1 grace=${2:-5} i
    [[ -n $pid ]] || return 0
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local status=$?
    stop_pid "$load_pid" 5
    stop_pid "$perf_pid" 10
    stop_pid "$router_pid" 5
    stop_pid "$relay_pid" 3
    stop_pid "$broker_a_pid" 3
    stop_pid "$broker_b_pid" 3
    if [[ ${KEEP_TMP:-0} == 1 || $status -ne 0 ]]; then
        log "temporary files kept in $tmp"
    else
        rm -rf "$tmp"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

wait_port() {  # wait_port PORT PID: until something listens on 127.0.0.1:PORT (10 s)
    local port=$1 pid=$2 i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || { echo "process $pid exited before listening on $port" >&2; return 1; }
        if "$PYTHON" -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(s.connect_ex(('127.0.0.1', $port)))" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "nothing listens on 127.0.0.1:$port" >&2
    return 1
}

port_a=$(free_port)
port_b=$(free_port)
while [[ $port_b == "$port_a" ]]; do port_b=$(free_port); done

broker_conf() {  # broker_conf PORT FILE [bridge QoS]
    local port=$1 file=$2 bridge_qos=${3:-}
    cat >"$file" <<EOF
listener $port 127.0.0.1
allow_anonymous true
persistence false
# Unlimited queues and inflight windows on both brokers, for both paths.
max_queued_messages 0
max_inflight_messages 0
log_dest stderr
log_type error
log_type warning
log_type notice
EOF
    if [[ -n $bridge_qos ]]; then
        cat >>"$file" <<EOF

connection bench-bridge
address 127.0.0.1:$port_b
topic bench/# out $bridge_qos
cleansession true
notifications false
remote_clientid bench-bridge-a
start_type automatic
restart_timeout 1
EOF
    fi
}

start_broker_a() {  # start_broker_a [bridge QoS]
    stop_pid "$broker_a_pid" 3
    broker_conf "$port_a" "$tmp/broker-a.conf" "${1:-}"
    "$MOSQUITTO" -c "$tmp/broker-a.conf" >>"$tmp/broker-a.log" 2>&1 &
    broker_a_pid=$!
    wait_port "$port_a" "$broker_a_pid"
}

broker_conf "$port_b" "$tmp/broker-b.conf"
"$MOSQUITTO" -c "$tmp/broker-b.conf" >>"$tmp/broker-b.log" 2>&1 &
broker_b_pid=$!
wait_port "$port_b" "$broker_b_pid"
log "broker A on 127.0.0.1:$port_a, broker B on 127.0.0.1:$port_b ($("$MOSQUITTO" -h 2>/dev/null | head -1))"

# ---------------------------------------------------------------------------------------------
# One measured run
# ---------------------------------------------------------------------------------------------
results="$tmp/results.jsonl"
: >"$results"

cpu_ticks() {  # cpu_ticks PID: user + system clock ticks the process has used so far (0 if none)
    local pid=$1 stat
    [[ -n $pid ]] && stat=$(cat "/proc/$pid/stat" 2>/dev/null) || { echo 0; return; }
    stat=${stat##*) }  # the fields after the command name, which may hold spaces
    read -r -a fields <<<"$stat"
    echo $((fields[11] + fields[12]))  # utime and stime (fields 14 and 15 of proc(5))
}

run_load() {  # run_load PATH QOS [publisher port]
    local path=$1 qos=$2 pub_port=${3:-$port_a} line="" out="$tmp/load-$1-qos$2.json" status=0
    local before_a before_b before_router
    before_a=$(cpu_ticks "$broker_a_pid") before_b=$(cpu_ticks "$broker_b_pid") before_router=$(cpu_ticks "$router_pid")
    # In the background + wait, so that a signal to this script is handled at once.
    timeout "$((LOAD_TIMEOUT + 30))" "$PYTHON" "$here/load.py" --client "$CLIENT" \
        --pub-port "$pub_port" --sub-port "$port_b" --qos "$qos" --count "$COUNT" --warmup "$WARMUP" \
        --size "$SIZE" --window "$WINDOW" --timeout "$LOAD_TIMEOUT" --tag "$path-qos$qos" >"$out" &
    load_pid=$!
    wait "$load_pid" || status=$?
    load_pid=""
    [[ $status -eq 0 ]] && line=$(tail -1 "$out")
    # CPU seconds each process spent during the load run (the whole run, probe and warm-up too).
    local hz cpu
    hz=$(getconf CLK_TCK)
    cpu=$(printf '{"broker_a": %s, "broker_b": %s, "router": %s}' \
        "$(((($(cpu_ticks "$broker_a_pid") - before_a) * 1000) / hz))e-3" \
        "$(((($(cpu_ticks "$broker_b_pid") - before_b) * 1000) / hz))e-3" \
        "$(((($(cpu_ticks "$router_pid") - before_router) * 1000) / hz))e-3")
    if [[ -z $line ]]; then
        log "load generator failed for $path QoS $qos (exit status $status)"
        line="{\"tag\": \"$path-qos$qos\", \"qos\": $qos, \"failed\": true}"
    fi
    printf '{"path": "%s", "result": %s, "cpu_s": %s}\n' "$path" "$line" "$cpu" >>"$results"
    log "$path QoS $qos: $line cpu $cpu"
}

run_switchyard() {  # run_switchyard QOS
    local qos=$1 routes="$tmp/switchyard-qos$qos.yaml" rlog="$tmp/switchyard-qos$qos.log" i
    start_broker_a
    cat >"$routes" <<EOF
plugins: { dir: "$plugins" }
instances:
  a:
    plugin: mqtt
    url: "mqtt://127.0.0.1:$port_a"
    client_id: switchyard-bench-a
    subscriptions:
      - { topic: "bench/#", qos: $qos }
  b:
    plugin: mqtt
    url: "mqtt://127.0.0.1:$port_b"
    client_id: switchyard-bench-b
    publish: { qos: $qos }          # the topic comes from each envelope's mqtt.topic header
    inflight: $SY_INFLIGHT
    max_pending: $SY_MAX_PENDING
routes:
  - name: a-to-b
    from: a.messages
    to: b.publish
    queue: { size: $SY_QUEUE, on_full: block }
EOF
    "$router_bin" validate "$routes" >"$tmp/validate-qos$qos.log" 2>&1 \
        || { cat "$tmp/validate-qos$qos.log" >&2; return 1; }
    "$router_bin" run "$routes" --log-level info >"$rlog" 2>&1 &
    router_pid=$!
    for ((i = 0; i < 200; i++)); do
        if grep -q "connected to 127.0.0.1:$port_a" "$rlog" && grep -q "connected to 127.0.0.1:$port_b" "$rlog"; then break; fi
        kill -0 "$router_pid" 2>/dev/null || { cat "$rlog" >&2; echo "the router exited" >&2; return 1; }
        sleep 0.1
    done
    if ! grep -q "connected to 127.0.0.1:$port_a" "$rlog" || ! grep -q "connected to 127.0.0.1:$port_b" "$rlog"; then
        cat "$rlog" >&2
        echo "the router did not connect to both brokers within 20 s" >&2
        return 1
    fi
    if [[ -n ${PERF_DIR:-} ]]; then
        mkdir -p "$PERF_DIR"
        perf record -g -F 999 -p "$router_pid" -o "$PERF_DIR/switchyard-qos$qos.perf.data" >"$PERF_DIR/perf-qos$qos.log" 2>&1 &
        perf_pid=$!
    fi
    run_load switchyard "$qos"
    if [[ -n $perf_pid ]]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        stop_pid "$perf_pid" 15
        perf_pid=""
    fi
    stop_pid "$router_pid" 15
    router_pid=""
}

run_relay() {  # run_relay QOS: relay.py between the plain brokers (QoS 0 only)
    local qos=$1 i
    if [[ $qos != 0 ]]; then
        log "relay: QoS 0 only (it forwards PUBLISH packets verbatim, without packet ids); skipped at QoS $qos"
        return 0
    fi
    start_broker_a
    "$PYTHON" "$here/relay.py" --from-port "$port_a" --to-port "$port_b" >"$tmp/relay.log" 2>&1 &
    relay_pid=$!
    for ((i = 0; i < 100; i++)); do
        grep -q '^ready' "$tmp/relay.log" && break
        kill -0 "$relay_pid" 2>/dev/null || { cat "$tmp/relay.log" >&2; echo "relay.py exited" >&2; return 1; }
        sleep 0.1
    done
    # The relay's CPU is reported in the router column.
    router_pid=$relay_pid run_load relay "$qos"
    stop_pid "$relay_pid" 3
    relay_pid=""
}

run_bridge() {  # run_bridge QOS
    local qos=$1
    start_broker_a "$qos"
    run_load mosquitto-bridge "$qos"
    start_broker_a  # broker A without the bridge again
}

for qos in $QOS_LEVELS; do
    for path in $PATHS; do
        case $path in
        switchyard) run_switchyard "$qos" ;;
        mosquitto-bridge) run_bridge "$qos" ;;
        direct) run_load direct "$qos" "$port_b" ;;
        relay) run_relay "$qos" ;;
        *) echo "unknown path '$path'" >&2; exit 2 ;;
        esac
    done
done

# ---------------------------------------------------------------------------------------------
# Table
# ---------------------------------------------------------------------------------------------
"$PYTHON" - "$results" "$COUNT" "$SIZE" "$WARMUP" "$CLIENT" "$WINDOW" "$SY_INFLIGHT" "$SY_MAX_PENDING" "$SY_QUEUE" <<'EOF'
import json, sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
count, size, warmup, client, window, inflight, pending, queue = sys.argv[2:10]
print(f"\nbroker A -> broker B: {count} messages of {size} bytes per run after {warmup} warm-up messages;")
print(f"load.py --client {client}, QoS 1 publisher window {window}.")
print(f"switchyard: MQTT 5 links, b.inflight {inflight}, b.max_pending {pending}, route queue {queue} (block).")
print("mosquitto-bridge: 'connection' in broker A, MQTT 3.1.1, topic bench/# out QOS.")
print("Both brokers: max_queued_messages 0, max_inflight_messages 0.\n")
header = (f"{'path':<18} {'QoS':>3} {'msgs/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'lost':>6} {'dup':>5}"
          f"  {'CPU s: A':>9} {'B':>6} {'router':>6}")
print(header)
print("-" * len(header))
by = {}
for row in rows:
    r = row["result"]
    by[(row["path"], r["qos"])] = r
    if r.get("failed"):
        print(f"{row['path']:<18} {r['qos']:>3} {'failed':>10}")
        continue
    cpu = row.get("cpu_s", {})
    router = f"{cpu['router']:>6.2f}" if row["path"] in ("switchyard", "relay") else f"{'-':>6}"
    print(f"{row['path']:<18} {r['qos']:>3} {r['msgs_per_s']:>10.1f} {r['p50_ms']:>9.3f} {r['p99_ms']:>9.3f} "
          f"{r['lost']:>6} {r['duplicates']:>5}  {cpu.get('broker_a', 0):>9.2f} {cpu.get('broker_b', 0):>6.2f} {router}")
print()
for qos in sorted({r["qos"] for r in by.values()}):
    s, m = by.get(("switchyard", qos)), by.get(("mosquitto-bridge", qos))
    if not s or not m or s.get("failed") or m.get("failed") or not m["msgs_per_s"] or not m["p99_ms"]:
        print(f"QoS {qos}: no ratio (a run is missing or failed)")
        continue
    throughput = s["msgs_per_s"] / m["msgs_per_s"]
    p99 = s["p99_ms"] / m["p99_ms"]
    met = throughput >= 1.0 and s["p99_ms"] <= m["p99_ms"] and s["lost"] == 0
    print(f"QoS {qos}: Switchyard/bridge throughput {throughput:.3f}x, p99 {p99:.3f}x "
          f"(target: throughput >= 1.0x at equal or better p99, no loss: {'met' if met else 'NOT met'})")
EOF
