#!/usr/bin/env bash
# Footprint of the release build: installed size (stripped, as scripts/release installs it, and
# as built), and for a router running one instance of each of the six first-party plugins
# (core, mqtt, sip, qeo, push, ble) with its admin port: start-to-ready time (exec until
# /readyz answers "ready"), and after it has settled, resident memory (VmRSS) and threads by
# name; each start from a cold page cache for the installed files. See README.md next to this script.
#
# Environment (all optional):
#   RUNS=5        router starts (ready time, RSS and threads of each; the median is reported)
#   SETTLE=5      seconds between ready and reading RSS and threads
#   SKIP_BUILD=1  reuse the release build            KEEP_TMP=1 keep the temporary directory
#   INSTALL=DIR   measure an install made elsewhere (DIR/bin/switchyard, DIR/bin/*.so shared
#                 libraries, DIR/lib/switchyard/plugins) instead of scripts/release from the build
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
RUNS=${RUNS:-5}
SETTLE=${SETTLE:-5}
plugins=(core mqtt sip push qeo ble)

log() { printf '[footprint] %s\n' "$*" >&2; }

for tool in mosquitto dbus-daemon gdbus python3 objcopy; do
    command -v "$tool" >/dev/null || { echo "$tool is missing: run scripts/setup" >&2; exit 1; }
done

# shellcheck source=../lib/bench.sh
source "$here/../lib/bench.sh"
bench_release_build switchyard "${plugins[@]}"
bench_tmp footprint

# What a user installs: scripts/release from the same build (stripped, debug files beside).
install_dir=${INSTALL:-$tmp/install}
if [[ -z ${INSTALL:-} ]]; then
    log "installing with scripts/release into $install_dir"
    SKIP_BUILD=1 SCRATCH_PATH=.build-bench "$repo/scripts/release" "$install_dir" >/dev/null
fi
bin=$install_dir/bin/switchyard
plugin_dir=$install_dir/lib/switchyard/plugins
shared_libraries=("$install_dir"/bin/*.so)
[[ -e ${shared_libraries[0]} ]] || shared_libraries=()

size() { stat -c %s "$@" 2>/dev/null | awk '{s += $1} END {printf "%.1f", s / 1e6}'; }
echo "## Installed size (MB; 1 MB = 10^6 bytes)"
printf '%-12s %10s %10s %10s\n' file stripped debug-file as-built
for name in switchyard "${plugins[@]}"; do
    if [[ $name == switchyard ]]; then
        file=$bin debug=$install_dir/bin/.debug/switchyard.debug built=$release_dir/switchyard
    else
        file=$plugin_dir/lib$name.so debug=$plugin_dir/.debug/lib$name.so.debug built=$release_dir/lib$name.so
    fi
    printf '%-12s %10s %10s %10s\n' "$name" "$(size "$file")" "$(size "$debug")" "$(size "$built")"
done
built_files=("$release_dir/switchyard")
for name in "${plugins[@]}"; do built_files+=("$release_dir/lib$name.so"); done
for library in "${shared_libraries[@]}"; do
    built=$release_dir/$(basename "$library")
    [[ -f $built ]] && built_files+=("$built") || built=/nonexistent
    printf '%-12s %10s %10s %10s\n' "$(basename "$library")" "$(size "$library")" \
        "$(size "$install_dir/bin/.debug/$(basename "$library").debug")" "$(size "$built")"
done
printf '%-12s %10s %10s %10s\n' total "$(size "$bin" "${shared_libraries[@]}" "$plugin_dir"/lib*.so)" \
    "$(size "$install_dir"/bin/.debug/*.debug "$plugin_dir"/.debug/*.debug)" "$(size "${built_files[@]}")"

# The peers: a Mosquitto broker, the BlueZ double of the tests on a private D-Bus bus.
mqtt_port=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\n' "$mqtt_port" >"$tmp/mosquitto.conf"
mosquitto -c "$tmp/mosquitto.conf" >"$tmp/mosquitto.log" 2>&1 &
pids+=($!)
"$repo/examples/slate-button/bluez-double.sh" >"$tmp/bluez.log" 2>&1 &
pids+=($!)
wait_for "$tmp/bluez.log" "export DBUS_SYSTEM_BUS_ADDRESS="
bus=$(sed -n 's/^export DBUS_SYSTEM_BUS_ADDRESS=//p' "$tmp/bluez.log")

# One instance of each plugin, each with one route, in their default settings.
sip_port=$(free_port)
push_port=$(free_port)
admin_port=$(free_port)
qdm=$repo/examples/qsimplechat-bridge/qdm
cat >"$tmp/routes/main.yaml" <<YAML
instances:
  out: { plugin: core, file: { path: "$tmp/out.jsonl" } }
  broker:
    plugin: mqtt
    url: "mqtt://127.0.0.1:$mqtt_port"
    client_id: footprint
    subscriptions: [ { topic: footprint/in, qos: 1 } ]
  pager:
    plugin: sip
    identity: { impu: "sip:alice@example.test" }
    listen: { host: 127.0.0.1, port: $sip_port }
  push: { plugin: push, listen: "127.0.0.1:$push_port", projects: [footprint] }
  home:
    plugin: qeo
    qdm: ["$qdm/QSimpleChat_ChatMessage.xml"]
    domain: 133
    realm: "0x1234"
    read: [org.qeo.sample.simplechat.ChatMessage]
  slate:
    plugin: ble
    adapter: hci0
    device: { address: "AA:BB:CC:DD:EE:01" }
    service: "4e1c0001-5a1d-4f0e-9b7a-52695656e7a0"
    buttons: [ { characteristic: "4e1c0002-5a1d-4f0e-9b7a-52695656e7a0", button: 1 } ]
routes:
  - { from: broker.messages, to: out.write }
  - { from: pager.messages, to: out.write }
  - { from: push.messages, to: out.write }
  - { from: home.events, to: out.write }
  - { from: slate.buttons, to: out.write }
YAML

# Every start from a cold page cache for these files (measure.py says why).
evict=("$bin" "${shared_libraries[@]}" "$plugin_dir"/lib*.so)
log "$RUNS router starts, $SETTLE s settle each (router log: $tmp/router.log)"
DBUS_SYSTEM_BUS_ADDRESS=$bus \
    CYCLONEDDS_URI='<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo" multicast="true"/></Interfaces></General></Domain></CycloneDDS>' \
    ROUTER_LOG=$tmp/router.log \
    EVICT=$(IFS=:; echo "${evict[*]}") \
    TRAFFIC="mosquitto_pub -p $mqtt_port -t footprint/in -q 1 -m '{\"hello\":1}'" \
    python3 "$here/measure.py" "$RUNS" "$SETTLE" "$admin_port" -- \
    "$bin" run "$tmp/routes" --plugins "$plugin_dir" --spool "$tmp/spool.db" --admin "127.0.0.1:$admin_port" \
    >"$tmp/runs.jsonl"

python3 - "$tmp/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
def median(key): return statistics.median(run[key] for run in runs)
print(f"\n## Router with one instance of each plugin ({len(runs)} runs; median [min–max])")
for key, unit, scale in (("ready_ms", "ms", 1), ("ready_cold_ms", "ms", 1), ("VmRSS", "MB", 1 / 1024), ("RssAnon", "MB", 1 / 1024),
                         ("RssFile", "MB", 1 / 1024), ("Threads", "", 1), ("VmRSS_after_traffic", "MB", 1 / 1024),
                         ("Threads_after_traffic", "", 1)):
    values = [run[key] * scale for run in runs]
    label = {"ready_ms": "start to ready", "ready_cold_ms": "  (cold cache)", "VmRSS": "idle RSS (VmRSS)", "RssAnon": "  anonymous",
             "RssFile": "  file-backed", "Threads": "threads", "VmRSS_after_traffic": "RSS after traffic",
             "Threads_after_traffic": "threads after traffic"}[key]
    print(f"{label:<18} {median(key) * scale:8.1f} {unit:<3} [{min(values):.1f}–{max(values):.1f}]")
print("\nthreads by name (last run):")
for name, count in runs[-1]["threads"].items():
    print(f"  {count:3d}  {name}")
print("\nthreads by name after one MQTT message went through (last run):")
for name, count in runs[-1]["threads_after_traffic"].items():
    print(f"  {count:3d}  {name}")
print("\nresident MB by mapping (last run, largest first):")
for name, kilobytes in runs[-1]["rss_by_file_kB"]:
    print(f"  {kilobytes / 1024:6.1f}  {name}")
PY
echo
echo "build: $(bench_build_stamp); $(nproc) cores"
