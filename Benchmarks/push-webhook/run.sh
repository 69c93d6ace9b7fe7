#!/usr/bin/env bash
# Webhook ingest: FCM HTTP v1 send requests from wrk through Switchyard's push webhook and a
# route to a file sink, beside a bare Hummingbird endpoint (Benchmarks/Tools/BareWebhook) that does
# the same body collection, bearer check and FCM request parse, measured in the same run.
# See README.md next to this script.
#
# Environment (all optional):
#   DURATION=15s  measured wrk run per path (after WARMUP=3s)   CONNECTIONS=32  THREADS=1
#   DELIVERY=at-most-once   the route's delivery (at-least-once: each message spooled first)
#   SKIP_BUILD=1  reuse the release builds as they are      KEEP_TMP=1  keep the temporary directory
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
DURATION=${DURATION:-15s}
WARMUP=${WARMUP:-3s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-1}
DELIVERY=${DELIVERY:-at-most-once}
export BENCH_BEARER=bench-token

log() { printf '[push-webhook] %s\n' "$*" >&2; }

if ! command -v wrk >/dev/null; then
    if [[ $(id -u) -ne 0 ]]; then
        echo "wrk is missing: run 'apt-get install -y wrk' as root" >&2
        exit 1
    fi
    log "installing wrk"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    log "building the router and plugins (release, --scratch-path .build-bench)"
    (cd "$repo" && swift build -c release --scratch-path .build-bench >&2)
    log "building the bare endpoint (release, Benchmarks/.build)"
    (cd "$repo/Benchmarks" && swift build -c release --product BareWebhook >&2)
fi
release_dir=$(cd "$repo" && swift build -c release --scratch-path .build-bench --show-bin-path)
bare=$(cd "$repo/Benchmarks" && swift build -c release --show-bin-path)/BareWebhook
for file in "$release_dir/switchyard" "$release_dir/libcore.so" "$release_dir/libpush.so" "$bare"; do
    [[ -x $file || -f $file ]] || { echo "missing $file (build failed?)" >&2; exit 1; }
done

# shellcheck source=../lib/bench.sh
source "$here/../lib/bench.sh"
bench_tmp push-webhook core push

measure() { # NAME URL: warm-up, then the measured run; prints the measured run's JSON line
    wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" -s "$here/post.lua" "$2" >"$tmp/$1.warmup"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" -s "$here/post.lua" "$2" | tee "$tmp/$1.wrk" | tail -1
}

# --- Switchyard: webhook -> route -> file sink -------------------------------------------------
cat >"$tmp/routes/bench.yaml" <<YAML
instances:
  push: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "\${BENCH_BEARER}" } }
  out:  { plugin: core, file: { path: "$tmp/out.jsonl", format: body } }
routes:
  - { name: ingest, from: push.messages, to: out.write, delivery: $DELIVERY }
YAML
"$release_dir/switchyard" run "$tmp/routes" --plugins "$tmp/plugins" --spool "$tmp/spool.db" 2>"$tmp/router.log" &
router=$!
pids+=("$router")
wait_for "$tmp/router.log" "webhook listening on"
url=$(grep -o 'webhook listening on http://[0-9.:]*' "$tmp/router.log" | head -1 | awk '{print $4}')
log "switchyard: $url"
switchyard=$(measure switchyard "$url/v1/projects/bench/messages:send")
kill -TERM "$router"
wait "$router" || true
written=$(wc -l <"$tmp/out.jsonl")

# --- Bare Hummingbird endpoint ---------------------------------------------------------------
"$bare" "$tmp/bare.port" "$BENCH_BEARER" 2>"$tmp/bare.log" &
pids+=("$!")
for _ in $(seq 200); do [[ -s $tmp/bare.port ]] && break; sleep 0.1; done
bare_url="http://127.0.0.1:$(cat "$tmp/bare.port")"
log "bare: $bare_url"
baseline=$(measure bare "$bare_url/v1/projects/bench/messages:send")

python3 - "$switchyard" "$baseline" "$written" "$DELIVERY" "$(tail -1 "$tmp/switchyard.warmup")" <<'PY'
import json, sys
sy, bare, written, delivery = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
warmup = json.loads(sys.argv[5])
print("path               req/s     p50 ms   p99 ms   non-200  socket-errors")
print("-" * 70)
for name, r in (("switchyard", sy), ("bare-hummingbird", bare)):
    print("%-16s %9.1f %9.3f %8.3f %9d %14d" % (name, r["rps"], r["p50_us"] / 1000, r["p99_us"] / 1000, r["non_2xx"], r["socket_errors"]))
accepted = sum(r["requests"] - r["non_2xx"] for r in (sy, warmup))
print()
print("switchyard route delivery: %s; answered 200 (warm-up + measured): %d; envelopes the file sink wrote: %d (%s)" % (
    delivery, accepted, written, "none lost" if written >= accepted else "%d MISSING" % (accepted - written)))
ratio = sy["rps"] / bare["rps"] if bare["rps"] else 0
print("Switchyard/bare throughput %.3fx, p99 %.3fx (target: throughput >= 0.5x: %s)" % (
    ratio, sy["p99_us"] / max(bare["p99_us"], 1), "met" if ratio >= 0.5 else "NOT met"))
PY
