#!/usr/bin/env bash
# Webhook ingest: FCM HTTP v1 send requests from wrk through Switchyard's push webhook and a
# route to a `core` file sink, beside a bare Hummingbird endpoint (Benchmarks/Tools/BareWebhook)
# that does the same body collection, bearer check and FCM request parse and appends the message
# as a line to a file, measured in the same run; RUNS rounds, the medians printed at the end.
# See README.md next to this script.
#
# Environment (all optional):
#   DURATION=15s  measured wrk run per path (after WARMUP=3s)   CONNECTIONS=32  THREADS=1
#   RUNS=3        rounds of (switchyard, bare, bare without the file); medians of the ratios
#   DELIVERY=at-most-once   the route's delivery (at-least-once: each message spooled first,
#                 with the spool's default `sync: full`)
#   SPOOL_SYNC=normal  the spool's sync for a comparison (default: the spool's default, full)
#   PERF_DIR=DIR  after the measured rounds, one more run of each endpoint under `perf record -g`
#                 (not counted); perf.data and flame graph SVGs (Benchmarks/lib/flamegraph) in DIR
#   SKIP_BUILD=1  reuse the release builds as they are      KEEP_TMP=1  keep the temporary directory
#   ROUTER_BIN=FILE  run this router binary instead of the build's (an A/B of two router builds
#                    with the same plugins; libSwitchyardDependencies.so must be beside it)
#   PLUGINS_FROM=DIR take libpush.so and libcore.so from DIR instead of the build (with ROUTER_BIN,
#                    an A/B of two installs: DIR=INSTALL/lib/switchyard/plugins)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
DURATION=${DURATION:-15s}
WARMUP=${WARMUP:-3s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-1}
RUNS=${RUNS:-3}
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

# shellcheck source=../lib/bench.sh
source "$here/../lib/bench.sh"
# ALLOCATIONS=1: the router runs with the malloc counter and each Switchyard round logs its
# allocations per envelope under load (Benchmarks/lib/allocations.sh).
source "$here/../lib/allocations.sh"
bench_release_build switchyard push core
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    log "building the bare endpoint (release, Benchmarks/.build)"
    (cd "$repo/Benchmarks" && swift build -c release --product BareWebhook >&2)
fi
bare=$(cd "$repo/Benchmarks" && swift build -c release --show-bin-path)/BareWebhook
for file in "$release_dir/switchyard" "$release_dir/libcore.so" "$release_dir/libpush.so" "$bare"; do
    [[ -x $file || -f $file ]] || { echo "missing $file (build failed?)" >&2; exit 1; }
done
bench_tmp push-webhook core push
results="$tmp/results.jsonl"

# cpu_ticks PID: user + system CPU of PID so far, in clock ticks.
# shellcheck source=../lib/proc.sh
source "$here/../lib/proc.sh"

measure() { # NAME URL RUN PID: warm-up, then the measured run; appends the measured run's JSON line
    wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" -s "$here/post.lua" "$2" | tail -1 >"$tmp/$1-$3.warmup"
    local line before after
    before=$(cpu_ticks "$4")
    line=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" -s "$here/post.lua" "$2" | tee "$tmp/$1-$3.wrk" | tail -1)
    after=$(cpu_ticks "$4")
    printf '{"run": %s, "path": "%s", "warmup": %s, "result": %s, "cpu_s": %s}\n' "$3" "$1" "$(cat "$tmp/$1-$3.warmup")" "$line" \
        "$(python3 -c "import os,sys; print((int(sys.argv[2]) - int(sys.argv[1])) / os.sysconf('SC_CLK_TCK'))" "$before" "$after")" >>"$results"
    log "run $3 $1: $line"
}

profile() { # NAME PID URL: one more (uncounted) run of NAME under perf record -g, rendered as a flame graph
    [[ -n ${PERF_DIR:-} ]] || return 0
    mkdir -p "$PERF_DIR"
    local data="$PERF_DIR/$1-$DELIVERY.perf.data" perf_pid
    perf record -g -F 999 -p "$2" -o "$data" >"$tmp/perf-$1.log" 2>&1 &
    perf_pid=$!
    sleep 0.5 # perf attaches to every thread before the load starts
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" -s "$here/post.lua" "$3" | tail -1 >"$tmp/$1-profiled.wrk"
    kill -INT "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" || true
    log "profiled $1: $(cat "$tmp/$1-profiled.wrk")"
    "$here/../lib/flamegraph" "$data" "$PERF_DIR/push-webhook-$1-$DELIVERY.svg" \
        --title "push webhook -> file ($DELIVERY): $1 under wrk -c$CONNECTIONS" >&2 || log "flame graph of $1 failed"
}

# --- Switchyard: webhook -> route -> file sink (spool and its sync at their defaults) ---------
cat >"$tmp/routes/bench.yaml" <<YAML
instances:
  push: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "\${BENCH_BEARER}" } }
  out:  { plugin: core, file: { path: "$tmp/out.jsonl", format: body } }
routes:
  - { name: ingest, from: push.messages, to: out.write, delivery: $DELIVERY }
YAML
[[ -z ${SPOOL_SYNC:-} ]] || printf 'spool: { sync: %s }\n' "$SPOOL_SYNC" >>"$tmp/routes/bench.yaml"
alloc_wrap "${ROUTER_BIN:-$release_dir/switchyard}" run "$tmp/routes" --plugins "$tmp/plugins" --spool "$tmp/spool.db" 2>"$tmp/router.log" &
router=$!
pids+=("$router")
wait_for "$tmp/router.log" "webhook listening on"
url=$(grep -o 'webhook listening on http://[0-9.:]*' "$tmp/router.log" | head -1 | awk '{print $4}')/v1/projects/bench/messages:send
log "switchyard: $url"

# --- The bare Hummingbird endpoint: with the file line (the baseline) and without (a reference)
start_bare() { # NAME OUT_FILE: starts BareWebhook, sets bare_pid and bare_url
    "$bare" "$tmp/$1.port" "$BENCH_BEARER" "$2" 2>"$tmp/$1.log" &
    bare_pid=$!
    pids+=("$bare_pid")
    for _ in $(seq 200); do [[ -s $tmp/$1.port ]] && break; sleep 0.1; done
    [[ -s $tmp/$1.port ]] || { echo "$1 did not start:" >&2; cat "$tmp/$1.log" >&2; exit 1; }
    bare_url="http://127.0.0.1:$(cat "$tmp/$1.port")/v1/projects/bench/messages:send"
    log "$1: $bare_url"
}
start_bare bare "$tmp/bare.jsonl"
bare_file_pid=$bare_pid bare_file_url=$bare_url
start_bare bare-parse-only -
bare_parse_pid=$bare_pid bare_parse_url=$bare_url

log "build $(bench_build_stamp); $RUNS rounds of $DURATION, $CONNECTIONS connections, route delivery $DELIVERY${SPOOL_SYNC:+, spool sync $SPOOL_SYNC}"
for run in $(seq "$RUNS"); do
    alloc_mark "$router"
    lines_before=$(wc -l <"$tmp/out.jsonl" 2>/dev/null || echo 0)
    measure switchyard "$url" "$run" "$router"
    alloc_report "$router" "$(($(wc -l <"$tmp/out.jsonl") - lines_before))" "switchyard round $run"
    measure bare "$bare_file_url" "$run" "$bare_file_pid"
    measure bare-parse-only "$bare_parse_url" "$run" "$bare_parse_pid"
done
profile switchyard "$router" "$url"
profile bare "$bare_file_pid" "$bare_file_url"

kill -TERM "$router"
wait "$router" || true
written=$(wc -l <"$tmp/out.jsonl")
profiled=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read())["requests"])' "$tmp/switchyard-profiled.wrk" 2>/dev/null || echo 0)

python3 - "$results" "$written" "$profiled" "$DELIVERY" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
written, profiled, delivery = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
target = 0.85 if delivery == "at-most-once" else 0.7
print("run  path               req/s     p50 ms   p99 ms   non-200  socket-errors  CPU us/request")
print("-" * 91)
for r in rows:
    x = r["result"]
    print("%-4d %-16s %9.1f %9.3f %8.3f %9d %14d %15.1f" % (
        r["run"], r["path"], x["rps"], x["p50_us"] / 1000, x["p99_us"] / 1000, x["non_2xx"], x["socket_errors"],
        r["cpu_s"] * 1e6 / max(x["requests"], 1)))
by = {(r["run"], r["path"]): r for r in rows}
runs = sorted({r["run"] for r in rows})
ratio = [by[(n, "switchyard")]["result"]["rps"] / by[(n, "bare")]["result"]["rps"] for n in runs]
p99 = [by[(n, "switchyard")]["result"]["p99_us"] / max(by[(n, "bare")]["result"]["p99_us"], 1) for n in runs]
parse = [by[(n, "switchyard")]["result"]["rps"] / by[(n, "bare-parse-only")]["result"]["rps"] for n in runs]
accepted = sum(r[k]["requests"] - r[k]["non_2xx"] for r in rows if r["path"] == "switchyard" for k in ("warmup", "result"))
accepted += profiled
print()
print("switchyard route delivery: %s; answered 200 (warm-ups + measured%s): %d; envelopes the file sink wrote: %d (%s)" % (
    delivery, " + profiled" if profiled else "", accepted, written,
    "none lost" if written >= accepted else "%d MISSING" % (accepted - written)))
print("Switchyard/bare throughput per run: %s; median %.3fx (target >= %.2fx: %s)" % (
    ", ".join("%.3f" % r for r in ratio), statistics.median(ratio), target,
    "met" if statistics.median(ratio) >= target else "NOT met"))
print("Switchyard/bare p99 per run: %s; median %.3fx" % (", ".join("%.3f" % r for r in p99), statistics.median(p99)))
cpu = lambda path: statistics.median(r["cpu_s"] * 1e6 / max(r["result"]["requests"], 1) for r in rows if r["path"] == path)
print("CPU per request (the endpoint's process), median: switchyard %.1f us, bare %.1f us (%.2fx)" % (
    cpu("switchyard"), cpu("bare"), cpu("switchyard") / max(cpu("bare"), 1e-9)))
print("Switchyard/bare-parse-only (no file line) throughput per run: %s; median %.3fx" % (
    ", ".join("%.3f" % r for r in parse), statistics.median(parse)))
PY
