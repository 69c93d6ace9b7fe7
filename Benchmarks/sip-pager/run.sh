#!/usr/bin/env bash
# SIP MESSAGE ingest: SIPp sends MESSAGE at increasing rates through Kamailio to the router,
# registered there as alice, which writes each one to a file sink; beside Kamailio relaying the
# same load straight to a SIPp UAS, in the same run. Per rate and path: calls, answered, failed,
# written (router), p50/p99 response time seen by SIPp; then the highest rate with zero loss of
# each path and their ratio. See README.md next to this script.
#
# Environment (all optional):
#   RATES="500 1000 2000 4000 6000 8000 10000 12000"   messages per second, tried in order
#   STEP_SECONDS=10   seconds of load per rate          DELIVERY=at-most-once (or at-least-once)
#   SKIP_BUILD=1      reuse the release build            KEEP_TMP=1 keep the temporary directory
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
RATES=${RATES:-"500 1000 2000 4000 6000 8000 10000 12000"}
STEP_SECONDS=${STEP_SECONDS:-10}
DELIVERY=${DELIVERY:-at-most-once}

log() { printf '[sip-pager] %s\n' "$*" >&2; }

for tool in kamailio sipp python3; do
    command -v "$tool" >/dev/null || { echo "$tool is missing: run scripts/setup" >&2; exit 1; }
done
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    log "building the router and plugins (release, --scratch-path .build-bench)"
    (cd "$repo" && swift build -c release --scratch-path .build-bench >&2)
fi
release_dir=$(cd "$repo" && swift build -c release --scratch-path .build-bench --show-bin-path)
for file in "$release_dir/switchyard" "$release_dir/libcore.so" "$release_dir/libsip.so"; do
    [[ -f $file ]] || { echo "missing $file (build failed?)" >&2; exit 1; }
done

# shellcheck source=../lib/bench.sh
source "$here/../lib/bench.sh"
bench_tmp sip-pager core sip
bench_on_exit() { pkill -f "$tmp/kamailio.cfg" 2>/dev/null || true; }

# Kamailio: the example's configuration (registrar, relay, MESSAGE from other domains unchallenged).
kamailio_port=$(free_port)
sed "s/:5060/:$kamailio_port/" "$repo/examples/sip-pager/kamailio.cfg" >"$tmp/kamailio.cfg"
cp -r "$repo/examples/sip-pager/db" "$tmp/db"
SIP_DB_URL="text://$tmp/db" kamailio -f "$tmp/kamailio.cfg" -DD -E -Y "$tmp" -w "$tmp" -P "$tmp/kamailio.pid" \
    -x tlsf -m 512 >"$tmp/kamailio.log" 2>&1 &
pids+=($!)
wait_for "$tmp/kamailio.log" "INFO: <core> \[main.c"
sleep 1

# The router, registered as alice; every MESSAGE to a file.
router_port=$(free_port)
cat >"$tmp/routes/main.yaml" <<YAML
instances:
  pager:
    plugin: sip
    identity: { impu: "sip:alice@example.test", password: alice-secret }
    listen: "127.0.0.1:$router_port"
    proxy: "sip:127.0.0.1:$kamailio_port"
    register: { expires: 600 }
    receive: { answer_timeout: 30s }
  out: { plugin: core, file: { path: "$tmp/messages.jsonl" } }
routes:
  - { from: pager.messages, to: out.write, delivery: $DELIVERY }
YAML
"$release_dir/switchyard" run "$tmp/routes" --plugins "$tmp/plugins" --spool "$tmp/spool.db" >"$tmp/router.log" 2>&1 &
pids+=($!)
wait_for "$tmp/router.log" "registered sip:alice@example.test"

# The direct baseline's receiver: a SIPp UAS answering every MESSAGE 200.
uas_port=$(free_port)
cat >"$tmp/uas.xml" <<'XML'
<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="uas">
  <recv request="MESSAGE"/>
  <send><![CDATA[
SIP/2.0 200 OK
[last_Via:]
[last_From:]
[last_To:];tag=[call_number]
[last_Call-ID:]
[last_CSeq:]
Content-Length: 0

]]></send>
</scenario>
XML
(cd "$tmp" && sipp -sf uas.xml -i 127.0.0.1 -p "$uas_port" -nostdin -bg >/dev/null 2>&1) || true
sleep 0.5
pgrep -f "sipp -sf uas.xml -i 127.0.0.1 -p $uas_port" >/dev/null || { echo "the SIPp UAS did not start" >&2; exit 1; }
pids+=($(pgrep -f "sipp -sf uas.xml -i 127.0.0.1 -p $uas_port"))

# One step: SIPp sends RATE MESSAGEs/s for STEP_SECONDS through Kamailio to URI (100-byte body).
run_step() { # NAME URI RATE → "calls ok failed p50 p99"
    local name=$1 uri=$2 rate=$3 calls=$(($3 * STEP_SECONDS))
    local dir="$tmp/$name-$rate"
    mkdir -p "$dir"
    cat >"$dir/uac.xml" <<XML
<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="uac">
  <send retrans="500" start_rtd="1"><![CDATA[
MESSAGE $uri SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:bench@peer.test>;tag=[call_number]
To: <$uri>
Call-ID: [call_id]
CSeq: 1 MESSAGE
Max-Forwards: 70
Content-Type: text/plain
Content-Length: [len]

bench message [call_number] $(printf 'x%.0s' $(seq 70))
]]></send>
  <recv response="200" rtd="1"/>
</scenario>
XML
    (cd "$dir" && timeout $((STEP_SECONDS + 60)) sipp "127.0.0.1:$kamailio_port" -sf uac.xml -i 127.0.0.1 -p "$(free_port)" \
        -r "$rate" -m "$calls" -l $((rate * 4)) -nostdin -timeout $((STEP_SECONDS + 40))s -timeout_error \
        -trace_stat -stf stat.csv -fd 1 -trace_rtt -rtt_freq 100 >/dev/null 2>&1) || true
    python3 - "$dir" "$calls" <<'PY'
import csv, glob, sys
directory, calls = sys.argv[1], int(sys.argv[2])
rows = list(csv.DictReader(open(f"{directory}/stat.csv"), delimiter=";"))
last = rows[-1] if rows else {}
ok = int(last.get("SuccessfulCall(C)", 0)); failed = int(last.get("FailedCall(C)", 0))
times = []
for path in glob.glob(f"{directory}/*_rtt.csv"):
    for row in csv.reader(open(path), delimiter=";"):
        try: times.append(float(row[1]))
        except (ValueError, IndexError): pass
times.sort()
# SIPp measures whole milliseconds: 0 means under 1 ms.
pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] if times else float("nan")
show = lambda value: "<1" if value == 0 else f"{value:.0f}"
print(calls, ok, failed, show(pick(0.50)), show(pick(0.99)))
PY
}

printf '%-8s %-7s %8s %8s %7s %8s %9s %9s\n' path rate calls answered failed written p50_ms p99_ms
best_direct=0
best_router=0
direct_done=0
router_done=0
for rate in $RATES; do
    if [[ $direct_done == 0 ]]; then
        read -r calls ok failed p50 p99 < <(run_step direct "sip:bob@127.0.0.1:$uas_port" "$rate")
        printf '%-8s %-7s %8s %8s %7s %8s %9s %9s\n' direct "$rate" "$calls" "$ok" "$failed" - "$p50" "$p99"
        if [[ $ok == "$calls" && $failed == 0 ]]; then best_direct=$rate; else direct_done=1; fi
    fi
    if [[ $router_done == 0 ]]; then
        before=$(wc -l <"$tmp/messages.jsonl" 2>/dev/null || echo 0)
        read -r calls ok failed p50 p99 < <(run_step router "sip:alice@example.test" "$rate")
        sleep 1
        written=$(($(wc -l <"$tmp/messages.jsonl") - before))
        printf '%-8s %-7s %8s %8s %7s %8s %9s %9s\n' router "$rate" "$calls" "$ok" "$failed" "$written" "$p50" "$p99"
        if [[ $ok == "$calls" && $failed == 0 && $written == "$calls" ]]; then best_router=$rate; else router_done=1; fi
    fi
    [[ $direct_done == 1 && $router_done == 1 ]] && break
done
echo
echo "highest rate with zero loss: direct (Kamailio → SIPp UAS) $best_direct/s, router (Kamailio → Switchyard → file) $best_router/s"
python3 -c "import sys; d, r = float(sys.argv[1]), float(sys.argv[2]); print(f'ratio router/direct: {r / d:.2f}' if d else 'ratio: n/a')" \
    "$best_direct" "$best_router"
echo "(delivery: $DELIVERY; rates tried: $RATES; $STEP_SECONDS s each; the last rate tried caps both)"
