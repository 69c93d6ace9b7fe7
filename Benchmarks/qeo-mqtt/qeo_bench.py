"""Load and measurement for Benchmarks/qeo-mqtt/run.sh (Python `cyclonedds`, domain QEO_DOMAIN).

    qeo_bench.py pub N            write N ChatMessages (~100 bytes) as fast as reliability allows;
                                  the message starts with the send time in ns
    qeo_bench.py sub N SECONDS    take N ChatMessages (or stop after SECONDS); print a JSON line
                                  with count, msgs/s (first to last) and latency p50/p99 in ms
    qeo_bench.py mqtt-stats FILE  the same figures from `mosquitto_sub -F '%U %p'` lines, where
                                  %U is the receive time and the payload carries the send time
    qeo_bench.py mqtt-lines N     print N ChatMessage JSON lines for `mosquitto_pub -l`, each
                                  stamped as it is written (the pipe's back-pressure paces it)
"""
import json
import os
import sys
import time

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration


class ChatMessage(IdlStruct, typename="org::qeo::sample::simplechat::ChatMessage"):
    __annotations__ = {"from": str, "message": str}

    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, value)


QOS = Qos(Policy.Reliability.Reliable(max_blocking_time=duration(seconds=10)), Policy.Durability.Volatile, Policy.History.KeepAll)
PADDING = "x" * 70


def stats(received, latencies):
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else float("nan")
    span = (received[-1] - received[0]) / 1e9 if len(received) > 1 else float("nan")
    rate = (len(received) - 1) / span if len(received) > 1 and span > 0 else float("nan")
    return {"count": len(received), "msgs_per_s": round(rate, 1), "p50_ms": round(pick(0.5), 3), "p99_ms": round(pick(0.99), 3)}


def main():
    mode = sys.argv[1]
    if mode == "mqtt-stats":
        received, latencies = [], []
        for line in open(sys.argv[2]):
            stamp, _, payload = line.partition(" ")
            try:
                sent = int(json.loads(payload)["message"].split(" ")[0])
            except (ValueError, KeyError, IndexError):
                continue
            at = int(float(stamp) * 1e9)
            received.append(at)
            latencies.append((at - sent) / 1e6)
        print(json.dumps(stats(received, latencies)))
        return
    if mode == "mqtt-lines":
        out = sys.stdout
        for _ in range(int(sys.argv[2])):
            out.write(json.dumps({"from": "bench", "message": f"{time.time_ns()} {PADDING}"}) + "\n")
            out.flush()
        return
    participant = DomainParticipant(int(os.environ.get("QEO_DOMAIN", "128")))
    topic = Topic(participant, "org/qeo/sample/simplechat/ChatMessage", ChatMessage)
    if mode == "pub":
        writer = DataWriter(participant, topic, qos=QOS)
        time.sleep(2)  # discovery
        for _ in range(int(sys.argv[2])):
            writer.write(ChatMessage(**{"from": "bench", "message": f"{time.time_ns()} {PADDING}"}))
        time.sleep(3)  # let reliability finish before the writer goes
    elif mode == "sub":
        reader = DataReader(participant, topic, qos=QOS)
        wanted, deadline = int(sys.argv[2]), time.time() + float(sys.argv[3])
        print("ready", flush=True)
        received, latencies = [], []
        while len(received) < wanted and time.time() < deadline:
            samples = reader.take(N=256)
            now = time.time_ns()
            for sample in samples:
                if isinstance(sample, ChatMessage):
                    received.append(now)
                    latencies.append((now - int(sample.message.split(" ")[0])) / 1e6)
            if not samples:
                time.sleep(0.0005)
        print(json.dumps(stats(received, latencies)), flush=True)


main()
