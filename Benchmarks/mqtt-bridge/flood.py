#!/usr/bin/env python3
"""The second load generator of the MQTT bridge benchmark: a flooding publisher and a stock
subscriber, with nothing tuned.

- Publisher: a raw MQTT 3.1.1 client on a plain socket with TCP_NODELAY that writes all
  `--count` publishes to broker A as fast as the socket takes them, 64 packets per `send`.
  At QoS 1 it does not wait for PUBACKs (packet ids 1…65535, no window): a thread reads and
  counts them, so broker A's socket never backs up into it.
- Subscriber: `mosquitto_sub -h 127.0.0.1 -p B -t 'bench/#' -q QOS -F '%U %p'` on broker B,
  its stock client (one PUBACK per message at QoS 1). Each line carries mosquitto_sub's own
  receive time (%U, Unix time with nanoseconds) and the payload, which starts with the
  sequence number and the send time (`time.time_ns`, the same clock).

Phases as in load.py: probe (a QoS 0 message every 100 ms until one arrives), warm-up
(`--warmup` messages, waited for), measured (`--count` messages). Prints one JSON line with
the fields load.py prints: msgs_per_s = unique measured messages received / (last receive −
first send), p50_ms/p99_ms/max_ms of receive − send time, lost, duplicates, publish_msgs_per_s.
"""

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

# The packet encoding is load.py's (same folder).
from load import packet, utf8

BATCH = 64


def connect_packet(client_id):
    variable = utf8("MQTT") + bytes([4, 0x02]) + struct.pack("!H", 60)
    return packet(0x10, variable + utf8(client_id))


def publish_packet(topic, payload, qos, packet_id):
    return packet(0x30 | (qos << 1), utf8(topic) + (struct.pack("!H", packet_id) if qos else b"") + payload)


def read_packet(sock):
    """One packet's first byte and body (blocking); None when the connection closed."""
    head = sock.recv(1)
    if not head:
        return None
    multiplier, length = 1, 0
    while True:
        byte = sock.recv(1)
        if not byte:
            return None
        length += (byte[0] & 0x7F) * multiplier
        multiplier *= 128
        if not byte[0] & 0x80:
            break
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            return None
        body += chunk
    return head[0], body


class Subscriber:
    """mosquitto_sub on broker B; a thread collects its lines."""

    def __init__(self, port, qos):
        self.process = subprocess.Popen(
            ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", "bench/#", "-q", str(qos), "-F", "%U %p"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.chunks = []
        # Lines per kind (b"probe", b"warm", b"load"), counted as chunks arrive: cheap, so the
        # waiting does not take CPU from the path being measured.
        self.counts = {b"probe": 0, b"warm": 0, b"load": 0}
        self.lock = threading.Condition()
        self.last_line = time.monotonic()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        pending = b""
        fd = self.process.stdout.fileno()
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            text = pending + chunk
            cut = text.rfind(b"\n") + 1
            complete, pending = text[:cut], text[cut:]
            if not complete:
                continue
            with self.lock:
                for kind in self.counts:
                    self.counts[kind] += complete.count(b" %s " % kind)
                self.chunks.append(complete)
                self.last_line = time.monotonic()
                self.lock.notify_all()

    def wait_for(self, predicate, idle_timeout, total_timeout):
        """Until predicate(counts) holds, or no line came for idle_timeout, or total_timeout."""
        deadline = time.monotonic() + total_timeout
        with self.lock:
            while not predicate(self.counts):
                now = time.monotonic()
                if now > deadline or now - self.last_line > idle_timeout:
                    return False
                self.lock.wait(0.1)
            return True

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()


def payload(kind, seq, size):
    head = b"%s %d %d " % (kind, seq, time.time_ns())
    return head + b"x" * max(0, size - len(head))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pub-port", type=int, required=True)
    parser.add_argument("--sub-port", type=int, required=True)
    parser.add_argument("--qos", type=int, choices=(0, 1), default=0)
    parser.add_argument("--count", type=int, default=50000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=90)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    if args.count + args.warmup > 65535 and args.qos:
        sys.exit("flood.py: at QoS 1 count + warm-up must stay below 65536 (one packet id each, no reuse)")

    subscriber = Subscriber(args.sub_port, args.qos)
    sock = socket.create_connection(("127.0.0.1", args.pub_port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(connect_packet("flood-pub-%d" % os.getpid()))
    connack = read_packet(sock)
    if not connack or connack[0] != 0x20 or connack[1][1] != 0:
        sys.exit("flood.py: broker A refused the connection")
    pubacks = [0]

    def read_acks():
        # Reads in bulk and walks the packets (PUBACKs, 4 bytes each): a recv per packet
        # would take CPU from the path being measured.
        buffer = b""
        while True:
            try:
                chunk = sock.recv(1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            offset = 0
            while len(buffer) - offset >= 2:
                length, multiplier, index = 0, 1, offset + 1
                while index < len(buffer):
                    length += (buffer[index] & 0x7F) * multiplier
                    multiplier *= 128
                    index += 1
                    if not buffer[index - 1] & 0x80:
                        break
                else:
                    break
                if index + length > len(buffer):
                    break
                if buffer[offset] == 0x40:
                    pubacks[0] += 1
                offset = index + length
            buffer = buffer[offset:]

    threading.Thread(target=read_acks, daemon=True).start()

    # Probe: the path is up end to end once a QoS 0 message arrives at B.
    probe_deadline = time.monotonic() + 30
    while not subscriber.wait_for(lambda counts: counts[b"probe"] > 0, 0.1, 0.1):
        if time.monotonic() > probe_deadline:
            sys.exit("flood.py: no probe message arrived within 30 s")
        sock.sendall(publish_packet("bench/probe", payload(b"probe", 0, args.size), 0, 0))

    packet_id = [0]

    def flood(kind, count):
        start = time.monotonic()
        for first in range(0, count, BATCH):
            chunk = []
            for seq in range(first, min(first + BATCH, count)):
                if args.qos:
                    packet_id[0] += 1
                chunk.append(publish_packet("bench/load", payload(kind, seq, args.size), args.qos, packet_id[0]))
            sock.sendall(b"".join(chunk))
        return time.monotonic() - start

    flood(b"warm", args.warmup)
    subscriber.wait_for(lambda counts: counts[b"warm"] >= args.warmup, 5, args.timeout)
    publish_seconds = flood(b"load", args.count)
    subscriber.wait_for(lambda counts: counts[b"load"] >= args.count, 5, args.timeout)
    subscriber.stop()
    sock.close()

    latencies = {}
    first_send, last_receive, duplicates = None, 0, 0
    for line in b"".join(subscriber.chunks).split(b"\n"):
        fields = line.split(b" ")
        # "<receive s.ns> load <seq> <send ns> xxx…"
        if len(fields) < 4 or fields[1] != b"load":
            continue
        seconds, _, nanoseconds = fields[0].partition(b".")
        receive = int(seconds) * 1_000_000_000 + int(nanoseconds.ljust(9, b"0")[:9])
        seq, send = int(fields[2]), int(fields[3])
        if seq in latencies:
            duplicates += 1
            continue
        latencies[seq] = receive - send
        first_send = send if first_send is None else min(first_send, send)
        last_receive = max(last_receive, receive)
    ordered = sorted(latencies.values())

    def percentile(p):
        if not ordered:
            return 0.0
        return ordered[min(len(ordered) - 1, max(0, int(len(ordered) * p / 100 + 0.999999) - 1))] / 1e6

    span = (last_receive - first_send) / 1e9 if ordered else 0
    print(
        json.dumps(
            {
                "tag": args.tag,
                "client": "flood+mosquitto_sub",
                "qos": args.qos,
                "count": args.count,
                "received": len(ordered),
                "msgs_per_s": round(len(ordered) / span, 1) if span > 0 else 0.0,
                "p50_ms": round(percentile(50), 3),
                "p99_ms": round(percentile(99), 3),
                "max_ms": round(percentile(100), 3),
                "lost": args.count - len(ordered),
                "duplicates": duplicates,
                "publish_msgs_per_s": round(args.count / publish_seconds, 1) if publish_seconds > 0 else 0.0,
                "pubacks": pubacks[0],
            }
        )
    )


if __name__ == "__main__":
    main()
