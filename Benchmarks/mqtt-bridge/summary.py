#!/usr/bin/env python3
"""Prints run.sh's table: every row of every run, the ratios of each run, and their medians.

Arguments: RESULTS.jsonl COUNT SIZE WARMUP CLIENT WINDOW INFLIGHT MAX_PENDING QUEUE (as run.sh
passes them). Each line of RESULTS.jsonl is one load run: {"run", "generator", "path",
"result" (load.py's or flood.py's JSON line), "cpu_s" ({"broker_a", "broker_b", "router", "router_user",
"router_reads", "router_writes", "router_switches"})}. The `user%` column is router_user over router: the share of
the router's CPU spent in user space.

CPU per message = CPU seconds of broker A + broker B (+ the router, relay.py or the middle Mosquitto on those paths)
over the load run, divided by the messages it carried (measured + warm-up; the probe's few are
left out).
"""

import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
count, size, warmup, client, window, inflight, pending, queue = sys.argv[2:10]
rate = float(sys.argv[10]) if len(sys.argv) > 10 else 0.0
carried = int(count) + int(warmup)

print(f"\nbroker A -> broker B: {count} messages of {size} bytes per run after {warmup} warm-up messages.")
print(f"generator load: load.py --client {client}, QoS 1 publisher window {window}, batching subscriber"
      + (f", paced at {rate:g} msgs/s (one message per slot)." if rate else "."))
print("generator flood: flood.py, raw publisher flooding broker A (TCP_NODELAY, no window), mosquitto_sub on B.")
print(f"switchyard: MQTT 5 links, b.inflight {inflight}, b.max_pending {pending}, route queue {queue}.")
print("mosquitto-bridge: 'connection' in broker A, MQTT 3.1.1, topic bench/# out QOS.")
print("mosquitto-middle (when run): a third Mosquitto, bridged in from A and out to B; its CPU in the router column.")
print("Every broker: max_queued_messages 0, max_inflight_messages 0.\n")


# Paths with a process of their own between the brokers (its CPU is the router column).
OUTSIDE = ("switchyard", "relay", "mosquitto-middle")


def cpu_per_message_us(row):
    cpu = row.get("cpu_s", {})
    total = cpu.get("broker_a", 0) + cpu.get("broker_b", 0)
    if row["path"] in OUTSIDE:
        total += cpu.get("router", 0)
    return total / carried * 1e6


header = (
    f"{'run':>3} {'gen':<5} {'path':<17} {'QoS':>3} {'msgs/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'lost':>6} {'dup':>4}"
    f"  {'CPU s: A':>8} {'B':>5} {'router':>6} {'user%':>5} {'us/msg':>7}  {'router per 1000 msgs: reads':>27} {'writes':>6} {'switches':>8}"
    f"  {'vCPU ns':>9}"
)


def vcpu(row):
    """The vCPU round trip before/after the run (Benchmarks/lib/vcpu-distance): ~55 close, ~330 far."""
    values = row.get("vcpu_ns") or []
    return "/".join("?" if v is None else str(v) for v in values) or "-"


print(header)
print("-" * len(header))
by = {}
for row in rows:
    r = row["result"]
    key = (row.get("run", 1), row.get("generator", "load"), row["path"], r["qos"])
    lead = f"{key[0]:>3} {key[1]:<5} {row['path']:<17} {r['qos']:>3}"
    if r.get("failed"):
        print(f"{lead} {'failed':>9}")
        continue
    by[key] = dict(r, cpu_us=cpu_per_message_us(row))
    cpu = row.get("cpu_s", {})
    router = f"{cpu['router']:>6.2f}" if row["path"] in OUTSIDE else f"{'-':>6}"
    # The router's share of its CPU spent in user space (older results have no router_user).
    user = (
        f"{cpu['router_user'] / cpu['router']:>5.0%}"
        if row["path"] in OUTSIDE and "router_user" in cpu and cpu.get("router")
        else f"{'-':>5}"
    )
    print(
        f"{lead} {r['msgs_per_s']:>9.1f} {r['p50_ms']:>9.3f} {r['p99_ms']:>9.3f} {r['lost']:>6} {r['duplicates']:>4}"
        f"  {cpu.get('broker_a', 0):>8.2f} {cpu.get('broker_b', 0):>5.2f} {router} {user} {by[key]['cpu_us']:>7.2f}"
        + (
            f"  {cpu.get('router_reads', 0) * 1000 / carried:>27.0f} {cpu.get('router_writes', 0) * 1000 / carried:>6.0f}"
            f" {cpu.get('router_switches', 0) * 1000 / carried:>8.0f}"
            if row["path"] in OUTSIDE
            else f"  {'':>27} {'':>6} {'':>8}"
        )
        + f"  {vcpu(row):>9}"
    )
print()


def ratio(a, b, field):
    if not a or not b or not b[field]:
        return None
    return a[field] / b[field]


ratios = {}  # (generator, qos, name) -> [per run]
for run, generator, qos in sorted({(k[0], k[1], k[3]) for k in by}):
    s = by.get((run, generator, "switchyard", qos))
    m = by.get((run, generator, "mosquitto-bridge", qos))
    relay = by.get((run, generator, "relay", qos))
    middle = by.get((run, generator, "mosquitto-middle", qos))
    parts = []
    for name, value in (
        ("throughput/bridge", ratio(s, m, "msgs_per_s")),
        ("p50/bridge", ratio(s, m, "p50_ms")),
        ("p99/bridge", ratio(s, m, "p99_ms")),
        ("cpu_per_msg/bridge", ratio(s, m, "cpu_us")),
        ("throughput/relay", ratio(s, relay, "msgs_per_s")),
        ("throughput/middle", ratio(s, middle, "msgs_per_s")),
        ("cpu_per_msg/middle", ratio(s, middle, "cpu_us")),
        ("p50/middle", ratio(s, middle, "p50_ms")),
        ("middle: p50/bridge", ratio(middle, m, "p50_ms")),
        ("middle: throughput/bridge", ratio(middle, m, "msgs_per_s")),
        ("middle: cpu_per_msg/bridge", ratio(middle, m, "cpu_us")),
    ):
        if value is None:
            continue
        ratios.setdefault((generator, qos, name), []).append(value)
        parts.append(f"{name} {value:.3f}x")
    lost = f", switchyard lost {s['lost']}" if s and s["lost"] else ""
    print(f"run {run} {generator} QoS {qos}: " + (", ".join(parts) or "no ratio (a run is missing or failed)") + lost)

targets = {
    (1, "throughput/bridge"): (">=", 1.0),
    (1, "p99/bridge"): ("<=", 1.5),
    (0, "throughput/relay"): (">=", 1.0),
    (0, "cpu_per_msg/bridge"): ("<=", 1.3),
    (1, "cpu_per_msg/bridge"): ("<=", 1.3),
}
if rate:
    # Paced (issue 37 item 1): latency without a backlog; throughput is the schedule's.
    targets = {(qos, name): bound for qos in (0, 1) for name, bound in
               (("p50/bridge", ("<=", 1.5)), ("p99/bridge", ("<=", 2.0)))}
print(f"\nMedians over {max((k[0] for k in by), default=0)} run(s) (targets of issue {37 if rate else 20} where one applies):")
for (generator, qos, name), values in sorted(ratios.items()):
    median = statistics.median(values)
    target = targets.get((qos, name))
    verdict = ""
    if target:
        op, bound = target
        met = median >= bound if op == ">=" else median <= bound
        verdict = f"  (target {op} {bound}x: {'met' if met else 'NOT met'})"
    print(f"  {generator:<5} QoS {qos} {name:<26} {median:.3f}x  [{', '.join(f'{v:.3f}' for v in values)}]{verdict}")
