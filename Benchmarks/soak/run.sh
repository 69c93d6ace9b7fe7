#!/usr/bin/env bash
# Soak: MQTT -> at-least-once route (dedupe) -> FCM (the tests' local emulator) and a JSON-lines
# file, for DURATION seconds with a `kill -9` of the router every INTERVAL seconds (restarted at
# once on the same spool) and a broker restart half-way between kills, then CALM seconds with no
# faults. Checks that every message the broker acknowledged reached both sinks, counts the
# duplicates, and compares the router's RSS. Loopback only. See README.md next to this script.
#
# Environment (all optional):
#   DURATION=600  fault phase, seconds          INTERVAL=30  seconds between router kills
#   CALM=120      final phase without faults    RATE=250     messages per second (QoS 1)
#   WINDOW=500    publishes awaiting PUBACK     SETTLE=60    longest wait for the sinks at the end
#   DEDUPE=10m    the route's dedupe window     WARM=30      calm-phase age of the warm-up RSS sample
#   RSS_AGE=25    router age at which RSS is compared across lifetimes
#   SKIP_BUILD=1  reuse .build-bench as it is   KEEP_TMP=1   keep the temporary directory (kept on failure)
#   SESSION=clean clean_start: true on the mqtt instance (the old default: the baseline)
#   BUILD_DIR=.build/debug  run on an existing build (behaviour, not speed)
#
# Exit status: 0 when nothing was lost, 1 when a message is missing at a sink or dead-lettered,
# 2 when the run could not be set up.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

log() { printf '[soak] %s\n' "$*" >&2; }

for tool in mosquitto openssl setpriv python3; do
    command -v "$tool" >/dev/null 2>&1 || [[ -x /usr/sbin/$tool ]] || {
        echo "$tool is missing (mosquitto: apt-get install -y mosquitto; setpriv: util-linux)" >&2
        exit 2
    }
done
export PATH="$PATH:/usr/sbin"

# shellcheck source=../lib/bench.sh
source "$here/../lib/bench.sh"
bench_release_build switchyard core mqtt push
for file in switchyard libcore.so libmqtt.so libpush.so; do
    [[ -f $release_dir/$file ]] || { echo "missing $release_dir/$file (build failed?)" >&2; exit 2; }
done
bench_tmp soak core mqtt push
trap 'exit 130' INT
trap 'exit 143' TERM

log "release build: $release_dir (built from $(bench_build_stamp); checkout now at $(cd "$repo" && git rev-parse --short HEAD))"
python3 "$here/soak.py" --release-dir "$release_dir" --tmp "$tmp" \
    --duration "${DURATION:-600}" --interval "${INTERVAL:-30}" --calm "${CALM:-120}" --rate "${RATE:-250}" \
    --window "${WINDOW:-500}" --settle "${SETTLE:-60}" --dedupe "${DEDUPE:-10m}" --warm "${WARM:-30}" \
    --rss-age "${RSS_AGE:-25}" --session "${SESSION:-default}" &
pids+=("$!")
status=0
wait "$!" || status=$?
pids=()
if [[ $status -ne 0 ]]; then KEEP_TMP=1; fi
exit "$status"
