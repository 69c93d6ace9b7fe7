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
#   PATHS="relay switchyard mosquitto-bridge"   `relay` (QoS 0 only) is relay.py, the least a
#                    separate bridge process can do (the ceiling of any out-of-process bridge);
#                    add `direct` for a reference row: publisher and subscriber both on broker
#                    B, nothing forwarded (the clients' and one broker's ceiling); add
#                    `mosquitto-middle` for a third Mosquitto between A and B, bridged in from A
#                    and out to B (the same out-of-broker hop made by the best C broker there is,
#                    at every QoS; it confirms to A on receipt, Switchyard only once B has)
#   GENERATORS="load flood"  load generators, each run on every path: `load` is load.py
#                    (windowed publisher, batching subscriber), `flood` is flood.py (a raw
#                    publisher flooding broker A with TCP_NODELAY, no window, and a stock
#                    `mosquitto_sub` on broker B)
#   RUNS=1           repeat everything RUNS times; the summary gives the median of each ratio
#   CLIENT=raw       load.py client: raw (default) or paho (see load.py: paho is slower than the paths)
#   RATE=N           the `load` generator paces its publisher: N messages per second on a fixed
#                    schedule (latency without a backlog, issue 37's "paced 5,000/s"); `flood`
#                    is not paced, so use GENERATORS=load with it
#   SY_INFLIGHT, SY_MAX_PENDING, SY_QUEUE   unset (the default): Switchyard runs with the
#                    plugin's and the router's defaults. Set, they become b.inflight (QoS >= 1
#                    publishes awaiting PUBACK), b.max_pending and the route's queue size
#                    (on_full: block), for experiments; the table says which were set.
#   SKIP_BUILD=1     reuse .build-bench as is
#   ROUTER_BIN=FILE  run this router binary instead of the build's (an A/B of two router builds
#                    with the same plugins; libSwitchyardDependencies.so must be beside it)
#   PLUGINS_FROM=DIR take libcore.so and libmqtt.so from DIR instead of the build (with ROUTER_BIN,
#                    an A/B of two installs: DIR=INSTALL/lib/switchyard/plugins)
#   PERF_DIR=DIR     record `perf record -g` of the router during each Switchyard run into DIR
#                    (PERF_FREQUENCY=HZ samples per second, default 999)
#   KEEP_TMP=1       keep the temporary directory (configs, logs, raw results)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

COUNT=${COUNT:-50000}
WARMUP=${WARMUP:-500}
SIZE=${SIZE:-100}
WINDOW=${WINDOW:-1000}
QOS_LEVELS=${QOS_LEVELS:-"0 1"}
PATHS=${PATHS:-"relay switchyard mosquitto-bridge"}
GENERATORS=${GENERATORS:-"load flood"}
RUNS=${RUNS:-1}
SY_INFLIGHT=${SY_INFLIGHT:-}
SY_MAX_PENDING=${SY_MAX_PENDING:-}
CLIENT=${CLIENT:-raw}
SY_QUEUE=${SY_QUEUE:-}
LOAD_TIMEOUT=${LOAD_TIMEOUT:-90}
RATE=${RATE:-0}

log() { printf '[mqtt-bridge] %s\n' "$*" >&2; }
# ALLOCATIONS=1: the router runs with the malloc counter and each Switchyard run logs its
# allocations per envelope under load (Benchmarks/lib/allocations.sh).
source "$here/../lib/allocations.sh"

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
install -m 0755 "${PLUGINS_FROM:-$release_dir}/libcore.so" "${PLUGINS_FROM:-$release_dir}/libmqtt.so" "$plugins/"
router_bin=${ROUTER_BIN:-$release_dir/switchyard}

# ---------------------------------------------------------------------------------------------
# Process bookkeeping: everything started here is killed on exit
# ---------------------------------------------------------------------------------------------
broker_a_pid="" broker_b_pid="" router_pid="" perf_pid="" load_pid="" relay_pid="" middle_pid=""

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
    stop_pid "$middle_pid" 3
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

wait_until() {  # wait_until SECONDS PID LOG WHAT COMMAND…: until COMMAND succeeds (0.1 s steps)
    # Fails, showing LOG (unless empty) and saying WHAT was awaited, when PID exits or time is up.
    local seconds=$1 pid=$2 show=$3 what=$4 i
    shift 4
    for ((i = 0; i < seconds * 10; i++)); do
        "$@" && return 0
        if ! kill -0 "$pid" 2>/dev/null; then
            [[ -z $show ]] || cat "$show" >&2
            echo "process $pid exited while waiting for $what" >&2
            return 1
        fi
        sleep 0.1
    done
    "$@" && return 0
    [[ -z $show ]] || cat "$show" >&2
    echo "no $what within $seconds s" >&2
    return 1
}

port_open() {  # port_open PORT: whether something listens on 127.0.0.1:PORT
    "$PYTHON" -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(s.connect_ex(('127.0.0.1', $1)))" 2>/dev/null
}

wait_port() {  # wait_port PORT PID: until something listens on 127.0.0.1:PORT (10 s)
    wait_until 10 "$2" "" "a listener on 127.0.0.1:$1" port_open "$1"
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

# cpu_ticks and syscalls: what a process has used so far (Benchmarks/lib/proc.sh).
source "$here/../lib/proc.sh"

run_load() {  # run_load PATH QOS GENERATOR [publisher port]
    local path=$1 qos=$2 generator=$3 pub_port=${4:-$port_a} line="" status=0
    local out="$tmp/$generator-$path-qos$qos-run$run.json" before_a before_b before_router before_router_user vcpu_before vcpu_after
    # The host's mode for the two vCPUs (Benchmarks/README.md, "The machine's two modes"), before and after.
    vcpu_before=$(vcpu_distance)
    start_perf "$path" "$qos" "$generator"
    before_a=$(cpu_ticks "$broker_a_pid") before_b=$(cpu_ticks "$broker_b_pid")
    read -r before_router before_router_user <<<"$(cpu_ticks "$router_pid" with-user)"
    local before_calls after_calls
    read -r -a before_calls <<<"$(syscalls "$router_pid")"
    # In the background + wait, so that a signal to this script is handled at once.
    if [[ $generator == flood ]]; then
        timeout "$((LOAD_TIMEOUT + 30))" "$PYTHON" "$here/flood.py" \
            --pub-port "$pub_port" --sub-port "$port_b" --qos "$qos" --count "$COUNT" --warmup "$WARMUP" \
            --size "$SIZE" --timeout "$LOAD_TIMEOUT" --tag "$path-qos$qos" >"$out" &
    else
        timeout "$((LOAD_TIMEOUT + 30))" "$PYTHON" "$here/load.py" --client "$CLIENT" \
            --pub-port "$pub_port" --sub-port "$port_b" --qos "$qos" --count "$COUNT" --warmup "$WARMUP" \
            --size "$SIZE" --window "$WINDOW" --rate "$RATE" --timeout "$LOAD_TIMEOUT" --tag "$path-qos$qos" >"$out" &
    fi
    load_pid=$!
    wait "$load_pid" || status=$?
    load_pid=""
    [[ $status -eq 0 ]] && line=$(tail -1 "$out")
    # CPU seconds each process spent during the load run (the whole run, probe and warm-up too).
    local hz cpu after_router after_router_user
    hz=$(getconf CLK_TCK)
    read -r after_router after_router_user <<<"$(cpu_ticks "$router_pid" with-user)"
    read -r -a after_calls <<<"$(syscalls "$router_pid")"
    # The router's (or relay's) read and write syscalls and context switches: how well it batches.
    # router_user: the part of the router's CPU in user space (the rest is the kernel's work for it).
    cpu=$(printf '{"broker_a": %s, "broker_b": %s, "router": %s, "router_user": %s, "router_reads": %s, "router_writes": %s, "router_switches": %s}' \
        "$(((($(cpu_ticks "$broker_a_pid") - before_a) * 1000) / hz))e-3" \
        "$(((($(cpu_ticks "$broker_b_pid") - before_b) * 1000) / hz))e-3" \
        "$((((after_router - before_router) * 1000) / hz))e-3" \
        "$((((after_router_user - before_router_user) * 1000) / hz))e-3" \
        "$((after_calls[0] - before_calls[0]))" "$((after_calls[1] - before_calls[1]))" "$((after_calls[2] - before_calls[2]))")
    stop_perf
    vcpu_after=$(vcpu_distance)
    if [[ -z $line ]]; then
        log "$generator failed for $path QoS $qos (exit status $status)"
        line="{\"tag\": \"$path-qos$qos\", \"qos\": $qos, \"failed\": true}"
    fi
    printf '{"run": %s, "generator": "%s", "path": "%s", "result": %s, "cpu_s": %s, "vcpu_ns": [%s, %s]}\n' \
        "$run" "$generator" "$path" "$line" "$cpu" "$vcpu_before" "$vcpu_after" >>"$results"
    log "run $run $generator $path QoS $qos: $line cpu $cpu"
}

vcpu_distance() {  # one cache-line round trip between vCPU 0 and 1 in ns, or null where it cannot be measured
    local ns
    ns=$("$here/../lib/vcpu-distance" 2>/dev/null || true)
    [[ $ns =~ ^[0-9]+$ ]] && echo "$ns" || echo null
}

start_perf() {  # start_perf PATH QOS GENERATOR: perf record -g of the router (Switchyard runs, PERF_DIR set)
    [[ -n ${PERF_DIR:-} && $1 == switchyard ]] || return 0
    mkdir -p "$PERF_DIR"
    perf record -g -F "${PERF_FREQUENCY:-999}" -p "$router_pid" -o "$PERF_DIR/switchyard-qos$2-$3-run$run.perf.data" \
        >"$PERF_DIR/perf-qos$2-$3-run$run.log" 2>&1 &
    perf_pid=$!
    sleep 0.5  # perf attaches to every thread before the load starts
}

stop_perf() {
    [[ -n $perf_pid ]] || return 0
    kill -INT "$perf_pid" 2>/dev/null || true
    stop_pid "$perf_pid" 15
    perf_pid=""
}

router_connected() {  # router_connected LOG: the router logged its connections to both brokers
    grep -q "connected to 127.0.0.1:$port_a" "$1" && grep -q "connected to 127.0.0.1:$port_b" "$1"
}

middle_bridged() {  # middle_bridged A_LINES B_LINES: brokers A and B logged the middle broker's clients after those lines
    # Not `tail | grep -q`: with pipefail, tail's SIGPIPE after an early match would read as a miss.
    grep -q "as bench-middle-in " < <(tail -n +"$(($1 + 1))" "$tmp/broker-a.log") \
        && grep -q "as bench-middle-out " < <(tail -n +"$(($2 + 1))" "$tmp/broker-b.log")
}

run_switchyard() {  # run_switchyard QOS
    local qos=$1 routes="$tmp/switchyard-qos$qos.yaml" rlog="$tmp/switchyard-qos$qos.log"
    start_broker_a
    local queue_line=""
    [[ -z $SY_QUEUE ]] || queue_line="    queue: { size: $SY_QUEUE, on_full: block }"
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
${SY_INFLIGHT:+    inflight: $SY_INFLIGHT}
${SY_MAX_PENDING:+    max_pending: $SY_MAX_PENDING}
routes:
  - name: a-to-b
    from: a.messages
    to: b.publish
$queue_line
EOF
    "$router_bin" validate "$routes" >"$tmp/validate-qos$qos.log" 2>&1 \
        || { cat "$tmp/validate-qos$qos.log" >&2; return 1; }
    alloc_wrap "$router_bin" run "$routes" --log-level info >"$rlog" 2>&1 &
    router_pid=$!
    wait_until 20 "$router_pid" "$rlog" "the router's connections to both brokers" router_connected "$rlog" || return 1
    for generator in $GENERATORS; do
        alloc_mark "$router_pid"
        run_load switchyard "$qos" "$generator"
        alloc_report "$router_pid" "$((COUNT + WARMUP))" "switchyard QoS $qos $generator"
    done
    stop_pid "$router_pid" 15
    router_pid=""
}

run_relay() {  # run_relay QOS: relay.py between the plain brokers (QoS 0 only)
    local qos=$1
    if [[ $qos != 0 ]]; then
        log "relay: QoS 0 only (it forwards PUBLISH packets verbatim, without packet ids); skipped at QoS $qos"
        return 0
    fi
    start_broker_a
    "$PYTHON" "$here/relay.py" --from-port "$port_a" --to-port "$port_b" >"$tmp/relay.log" 2>&1 &
    relay_pid=$!
    wait_until 10 "$relay_pid" "$tmp/relay.log" "relay.py's connections to both brokers" grep -q '^ready' "$tmp/relay.log" || return 1
    # The relay's CPU is reported in the router column.
    for generator in $GENERATORS; do router_pid=$relay_pid run_load relay "$qos" "$generator"; done
    stop_pid "$relay_pid" 3
    relay_pid=""
}

run_middle() {  # run_middle QOS: a third Mosquitto bridging A in and B out (its CPU in the router column)
    local qos=$1 port
    start_broker_a
    port=$(free_port)
    broker_conf "$port" "$tmp/broker-middle.conf"
    cat >>"$tmp/broker-middle.conf" <<EOF

connection from-a
address 127.0.0.1:$port_a
topic bench/# in $qos
cleansession true
notifications false
remote_clientid bench-middle-in
start_type automatic
restart_timeout 1

connection to-b
address 127.0.0.1:$port_b
topic bench/# out $qos
cleansession true
notifications false
remote_clientid bench-middle-out
start_type automatic
restart_timeout 1
EOF
    # What the brokers logged before (both logs are appended to).
    local a_lines b_lines
    a_lines=$(wc -l <"$tmp/broker-a.log") b_lines=$(wc -l <"$tmp/broker-b.log")
    "$MOSQUITTO" -c "$tmp/broker-middle.conf" >>"$tmp/broker-middle.log" 2>&1 &
    middle_pid=$!
    wait_port "$port" "$middle_pid"
    # Both bridges connected: broker A and broker B each log the middle broker's client.
    wait_until 10 "$middle_pid" "$tmp/broker-middle.log" "the middle broker's bridges to both brokers" \
        middle_bridged "$a_lines" "$b_lines" || return 1
    sleep 0.5  # the in-bridge's SUBSCRIBE reaches A (not logged at this log level); load.py's warm-up covers the rest
    for generator in $GENERATORS; do router_pid=$middle_pid run_load mosquitto-middle "$qos" "$generator"; done
    stop_pid "$middle_pid" 3
    middle_pid=""
}

run_bridge() {  # run_bridge QOS
    local qos=$1
    start_broker_a "$qos"
    for generator in $GENERATORS; do run_load mosquitto-bridge "$qos" "$generator"; done
    start_broker_a  # broker A without the bridge again
}

for ((run = 1; run <= RUNS; run++)); do
    for qos in $QOS_LEVELS; do
        for path in $PATHS; do
            case $path in
            switchyard) run_switchyard "$qos" ;;
            mosquitto-bridge) run_bridge "$qos" ;;
            direct) for generator in $GENERATORS; do run_load direct "$qos" "$generator" "$port_b"; done ;;
            relay) run_relay "$qos" ;;
            mosquitto-middle) run_middle "$qos" ;;
            *) echo "unknown path '$path'" >&2; exit 2 ;;
            esac
        done
    done
done

# ---------------------------------------------------------------------------------------------
# Table
# ---------------------------------------------------------------------------------------------
"$PYTHON" "$here/summary.py" "$results" "$COUNT" "$SIZE" "$WARMUP" "$CLIENT" "$WINDOW" \
    "${SY_INFLIGHT:-default}" "${SY_MAX_PENDING:-default}" "${SY_QUEUE:-default}" "$RATE"
[[ ${KEEP_RESULTS:-} ]] && cp "$results" "$KEEP_RESULTS"
exit 0
