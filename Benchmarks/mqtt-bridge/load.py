#!/usr/bin/env python3
"""Load generator for the broker A -> broker B forwarding benchmark.

A subscriber (its own process) listens on broker B to `bench/#`; a publisher connected to
broker A sends COUNT messages of SIZE bytes to `bench/m`. Each payload starts with a sequence
number and the send time (time.monotonic_ns, the same clock in both processes), so the
subscriber computes per-message latency and finds lost and duplicated messages.

Phases (only the last is measured):
  1. probe   - one QoS 0 message on `bench/probe` every 100 ms until the subscriber sees one
               (the path under test is connected and subscribed end to end);
  2. warm-up - WARMUP messages on `bench/w`, waited for;
  3. measure - COUNT messages on `bench/m`, as fast as the publisher can send them: at QoS 0
               the publisher only waits for its socket (TCP back-pressure from broker A), at
               QoS 1 it keeps at most WINDOW publishes unacknowledged. With --rate, one message
               at a time on a fixed schedule instead (RATE per second, each sent at its slot:
               latency without a backlog; the warm-up is paced too).

Two client implementations (--client):
  raw  (default) - a minimal MQTT 3.1.1 client on a plain socket, written for this benchmark:
                   the subscriber reads whatever the socket holds (up to 256 KiB) and parses
                   every packet in it; the publisher writes 64 publishes per send. Each message's
                   receive time is the time its socket read returned.
  paho           - paho-mqtt 2.x (CallbackAPIVersion.VERSION2). Paho reads a packet with three
                   recv() calls and is CPU-bound at roughly 16 k msg/s QoS 0 and 7 k msg/s QoS 1
                   on this machine even on one broker - below the paths under test, so it
                   measures itself, not the path. Kept for cross-checking.

Prints one JSON line: msgs_per_s = unique received / (last receive - first send), latency
percentiles (nearest rank) over receive time - send time of the first copy of each message,
lost and duplicated counts.
"""

import argparse
import json
import math
import multiprocessing as mp
import os
import select
import signal
import socket
import struct
import sys
import threading
import time

HEADER = struct.Struct(">QQ")  # sequence number, send time (monotonic ns)
TOPIC_MEASURED, TOPIC_WARM, TOPIC_PROBE = "bench/m", "bench/w", "bench/probe"


# ---------------------------------------------------------------------------------------------
# Minimal MQTT 3.1.1 over a socket
# ---------------------------------------------------------------------------------------------

def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def utf8(text):
    data = text.encode()
    return struct.pack(">H", len(data)) + data


def packet(first_byte, body):
    return bytes([first_byte]) + varint(len(body)) + body


class RawConnection:
    """A socket speaking just enough MQTT 3.1.1 for this benchmark (keep-alive off)."""

    def __init__(self, host, port, client_id, timeout=20.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = bytearray()
        connect = b"\x00\x04MQTT\x04\x02\x00\x00" + utf8(client_id)  # level 4, clean session, keep-alive 0
        self.sock.sendall(packet(0x10, connect))
        kind, body = self.read_packet()
        if kind != 2 or len(body) < 2 or body[1] != 0:
            raise SystemExit(f"{host}:{port} refused the connection (CONNACK {bytes(body).hex()})")

    def read_packet(self):
        """Blocking read of one whole packet (handshakes only): (type, body)."""
        while True:
            parsed = self.split(self.buffer)
            if parsed is not None:
                first, start, end = parsed
                body = bytes(self.buffer[start:end])
                del self.buffer[:end]
                return first >> 4, body
            data = self.sock.recv(65536)
            if not data:
                raise SystemExit("the broker closed the connection")
            self.buffer += data

    @staticmethod
    def split(buffer, pos=0):
        """(first byte, body start, body end) of the packet at pos, or None if incomplete."""
        available = len(buffer)
        if available - pos < 2:
            return None
        length, shift, index = 0, 0, pos + 1
        while True:
            if index >= available:
                return None
            byte = buffer[index]
            length |= (byte & 0x7F) << shift
            index += 1
            if not byte & 0x80:
                break
            shift += 7
        if index + length > available:
            return None
        return buffer[pos], index, index + length

    def subscribe(self, topic_filter, qos):
        self.sock.sendall(packet(0x82, b"\x00\x01" + utf8(topic_filter) + bytes([qos])))
        kind, body = self.read_packet()
        if kind != 9 or body[-1] >= 0x80:
            raise SystemExit(f"subscription to {topic_filter} refused")

    def publish_prefix(self, topic, qos, size):
        """Fixed header + topic of a publish with a payload of `size` bytes (packet id follows at QoS 1)."""
        variable = utf8(topic)
        length = len(variable) + (2 if qos else 0) + size
        return bytes([0x30 | (qos << 1)]) + varint(length) + variable

    def close(self):
        try:
            self.sock.sendall(b"\xe0\x00")  # DISCONNECT
        except OSError:
            pass
        self.sock.close()


class RawPublisher:
    def __init__(self, args):
        self.args = args
        self.conn = RawConnection(args.pub_host, args.pub_port, f"bench-pub-{args.tag}")
        self.sock = self.conn.sock
        self.padding = bytes(args.size - HEADER.size)
        self.next_id = 0
        self.acked = 0
        self.pending = bytearray()

    def probe(self):
        prefix = self.conn.publish_prefix(TOPIC_PROBE, 0, self.args.size)
        self.sock.sendall(prefix + HEADER.pack(0, time.monotonic_ns()) + self.padding)

    def read_acks(self, timeout):
        readable, _, _ = select.select([self.sock], [], [], timeout)
        if not readable:
            return
        data = self.sock.recv(262144)
        if not data:
            raise SystemExit("broker A closed the publisher's connection")
        self.pending += data
        pos = 0
        while True:
            parsed = RawConnection.split(self.pending, pos)
            if parsed is None:
                break
            first, _, end = parsed
            if first >> 4 == 4:  # PUBACK
                self.acked += 1
            pos = end
        del self.pending[:pos]

    def wait_for_acks(self, topic, base, count, deadline):
        """Reads PUBACKs until `count` publishes since `base` are acknowledged."""
        while self.acked - base < count:
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for PUBACKs on {topic} ({self.acked - base} of {count})")
            self.read_acks(0.05)

    def paced(self, topic, count, deadline):
        """One message per slot of 1/RATE s, each stamped when it is sent; at QoS 1 the
        acknowledgements are read while waiting for the next slot (the window still bounds what
        is in flight)."""
        qos, window, rate = self.args.qos, self.args.window, self.args.rate
        prefix = self.conn.publish_prefix(topic, qos, self.args.size)
        padding, pack = self.padding, HEADER.pack
        base = self.acked
        start = time.monotonic_ns()
        interval = 1e9 / rate
        for sent in range(count):
            slot = start + int(sent * interval)
            # Waits without spinning (a spinning generator would take a core from the path under
            # test on a small machine); a late wake-up shifts the send, and the stamp is the send.
            while (now := time.monotonic_ns()) < slot:
                if qos:
                    self.read_acks((slot - now) / 1e9)
                else:
                    time.sleep((slot - now) / 1e9)
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out after {sent} of {count} messages on {topic}")
            while qos and sent - (self.acked - base) >= window:
                self.read_acks(0.05)
            if qos:
                self.next_id = self.next_id % 65535 + 1
                self.sock.sendall(prefix + self.next_id.to_bytes(2, "big") + pack(sent, time.monotonic_ns()) + padding)
            else:
                self.sock.sendall(prefix + pack(sent, time.monotonic_ns()) + padding)
        if qos:
            self.wait_for_acks(topic, base, count, deadline)

    def stream(self, topic, count, deadline):
        if self.args.rate:
            return self.paced(topic, count, deadline)
        qos, window = self.args.qos, self.args.window
        prefix = self.conn.publish_prefix(topic, qos, self.args.size)
        padding = self.padding
        pack = HEADER.pack
        base = self.acked
        sent = 0
        while sent < count:
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out after {sent} of {count} messages on {topic}")
            room = 64 if qos == 0 else min(64, window - (sent - (self.acked - base)))
            if room <= 0:
                self.read_acks(0.05)
                continue
            batch = []
            for _ in range(min(room, count - sent)):
                if qos:
                    self.next_id = self.next_id % 65535 + 1
                    batch.append(prefix + self.next_id.to_bytes(2, "big") + pack(sent, time.monotonic_ns()) + padding)
                else:
                    batch.append(prefix + pack(sent, time.monotonic_ns()) + padding)
                sent += 1
            self.sock.sendall(b"".join(batch))  # blocks while broker A does not read (back-pressure)
            if qos:
                self.read_acks(0)
        if qos:
            self.wait_for_acks(topic, base, count, deadline)

    def idle(self, timeout):
        if self.args.qos:
            self.read_acks(timeout)
        else:
            time.sleep(timeout)

    def close(self):
        self.conn.close()


def raw_subscriber(args, conn, events):
    """Child process: subscribes on broker B and records receive times (raw client)."""
    warm_event, probe_event = events
    mqtt = RawConnection(args.sub_host, args.sub_port, f"bench-sub-{args.tag}")
    mqtt.subscribe("bench/#", args.qos)
    sock = mqtt.sock
    sock.settimeout(None)
    conn.send("ready")
    measured, warm = TOPIC_MEASURED.encode(), TOPIC_WARM.encode()
    heads, times = [], []
    warm_seen = set()
    buffer = mqtt.buffer
    parent = os.getppid()
    published = False
    last_message = time.monotonic()
    split = RawConnection.split
    count = args.count
    while True:
        readable, _, _ = select.select([sock, conn], [], [], 0.1)
        if conn in readable and not published:
            conn.recv()  # "published"
            published = True
            last_message = max(last_message, time.monotonic())
        if sock in readable:
            data = sock.recv(262144)
            now = time.monotonic_ns()
            if not data:
                print("broker B closed the subscriber's connection", file=sys.stderr)
                break
            buffer += data
            pos = 0
            acks = []
            while True:
                parsed = split(buffer, pos)
                if parsed is None:
                    break
                first, start, end = parsed
                if first >> 4 == 3:
                    topic_end = start + 2 + (buffer[start] << 8 | buffer[start + 1])
                    topic = buffer[start + 2:topic_end]
                    payload = topic_end
                    if first & 0x06:
                        acks.append(b"\x40\x02" + bytes(buffer[topic_end:topic_end + 2]))
                        payload += 2
                    if topic == measured:
                        heads.append(bytes(buffer[payload:payload + 16]))
                        times.append(now)
                    elif topic == warm:
                        warm_seen.add(HEADER.unpack_from(buffer, payload)[0])
                        if len(warm_seen) >= args.warmup:
                            warm_event.set()
                    else:
                        probe_event.set()
                pos = end
            del buffer[:pos]
            if acks:
                sock.sendall(b"".join(acks))
            last_message = time.monotonic()
        if published and (len(heads) >= count or time.monotonic() - last_message > args.idle):
            break
        if os.getppid() != parent:  # the publisher process is gone
            return
    mqtt.close()
    report(conn, heads, times, len(warm_seen))


def report(conn, heads, times, warm):
    first_copy = {}
    duplicates = 0
    for head, now in zip(heads, times):
        seq, sent = HEADER.unpack(head)
        if seq in first_copy:
            duplicates += 1
        else:
            first_copy[seq] = (sent, now)
    latencies = sorted(now - sent for sent, now in first_copy.values())
    last_receive = max((now for _, now in first_copy.values()), default=0)
    conn.send({"unique": len(first_copy), "duplicates": duplicates, "latencies": latencies,
               "last_receive": last_receive, "warm": warm})
    conn.close()


# ---------------------------------------------------------------------------------------------
# paho-mqtt 2.x
# ---------------------------------------------------------------------------------------------

def paho_client(client_id):
    import paho.mqtt.client as mqtt
    return mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=True,
                       protocol=mqtt.MQTTv311)


def paho_connect(client, host, port, threaded):
    state = {"rc": None}

    def on_connect(_client, _userdata, _flags, reason_code, _properties):
        state["rc"] = reason_code

    client.on_connect = on_connect
    client.connect(host, port, keepalive=60)
    if threaded:
        client.loop_start()
    deadline = time.monotonic() + 20
    while state["rc"] is None:
        if time.monotonic() > deadline:
            raise SystemExit(f"no CONNACK from {host}:{port}")
        if threaded:
            time.sleep(0.01)
        else:
            client.loop(timeout=0.1)
    if state["rc"].is_failure:
        raise SystemExit(f"{host}:{port} refused the connection: {state['rc']}")


class PahoPublisher:
    def __init__(self, args):
        self.args = args
        self.client = paho_client(f"bench-pub-{args.tag}")
        self.acked = 0
        self.padding = bytes(args.size - HEADER.size)

        def on_publish(_client, _userdata, _mid, _reason_code, _properties):
            self.acked += 1

        self.client.on_publish = on_publish
        self.client.max_inflight_messages_set(max(args.window, 1))
        self.client.max_queued_messages_set(0)
        paho_connect(self.client, args.pub_host, args.pub_port, threaded=False)

    def probe(self):
        self.client.publish(TOPIC_PROBE, HEADER.pack(0, time.monotonic_ns()) + self.padding, qos=0)

    def pump(self, block, deadline):
        """Lets paho read acknowledgements and write what the socket did not take."""
        self.client.loop(timeout=0.05 if block else 0)
        while self.client.want_write():
            self.client.loop(timeout=0.05)
            if time.monotonic() > deadline:
                raise SystemExit("timed out writing to broker A")

    def stream(self, topic, count, deadline):
        qos, window, client, padding = self.args.qos, self.args.window, self.client, self.padding
        base = self.acked
        sent = 0
        while sent < count:
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out after {sent} of {count} messages on {topic}")
            room = 64 if qos == 0 else min(64, window - (sent - (self.acked - base)))
            if room <= 0:
                self.pump(True, deadline)
                continue
            for _ in range(min(room, count - sent)):
                client.publish(topic, HEADER.pack(sent, time.monotonic_ns()) + padding, qos=qos)
                sent += 1
                if client.want_write():  # the socket is full: wait for it (TCP back-pressure)
                    self.pump(False, deadline)
            self.pump(False, deadline)
        while qos and self.acked - base < count and time.monotonic() < deadline:
            self.pump(True, deadline)

    def idle(self, timeout):
        self.client.loop(timeout=timeout)

    def close(self):
        self.client.disconnect()


def paho_subscriber(args, conn, events):
    """Child process: subscribes on broker B and records receive times (paho)."""
    warm_event, probe_event = events
    client = paho_client(f"bench-sub-{args.tag}")
    heads, times = [], []
    warm_seen = set()
    subscribed = threading.Event()
    done = threading.Event()
    last = {"t": time.monotonic()}

    def on_subscribe(_client, _userdata, _mid, reason_codes, _properties):
        if any(rc.is_failure for rc in reason_codes):
            print("subscription refused", file=sys.stderr)
        subscribed.set()

    def on_message(_client, _userdata, message):
        now = time.monotonic_ns()
        topic = message.topic
        if topic == TOPIC_MEASURED:
            heads.append(message.payload[:16])
            times.append(now)
            last["t"] = time.monotonic()
            if len(heads) >= args.count:
                done.set()
        elif topic == TOPIC_WARM:
            warm_seen.add(HEADER.unpack_from(message.payload)[0])
            if len(warm_seen) >= args.warmup:
                warm_event.set()
        else:
            probe_event.set()

    client.on_subscribe = on_subscribe
    client.on_message = on_message
    paho_connect(client, args.sub_host, args.sub_port, threaded=True)
    client.subscribe("bench/#", qos=args.qos)
    if not subscribed.wait(20):
        raise SystemExit("no SUBACK from broker B")
    conn.send("ready")
    conn.recv()  # "published"
    last["t"] = max(last["t"], time.monotonic())
    while not done.is_set() and time.monotonic() - last["t"] <= args.idle:
        done.wait(0.1)
    client.loop_stop()
    client.disconnect()
    report(conn, heads, times, len(warm_seen))


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------

def percentile(sorted_values, fraction):
    """Nearest rank: the smallest value with at least `fraction` of the values at or below it."""
    if not sorted_values:
        return None
    return sorted_values[max(0, min(len(sorted_values) - 1, math.ceil(fraction * len(sorted_values)) - 1))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pub-port", type=int, required=True, help="broker A port")
    parser.add_argument("--sub-port", type=int, required=True, help="broker B port")
    parser.add_argument("--pub-host", default="127.0.0.1")
    parser.add_argument("--sub-host", default="127.0.0.1")
    parser.add_argument("--qos", type=int, choices=[0, 1], default=0)
    parser.add_argument("--count", type=int, default=50_000, help="measured messages (default 50000)")
    parser.add_argument("--warmup", type=int, default=500, help="warm-up messages (default 500)")
    parser.add_argument("--size", type=int, default=100, help="payload bytes (default 100, minimum 16)")
    parser.add_argument("--window", type=int, default=1000, help="QoS 1 publishes in flight (default 1000)")
    parser.add_argument("--rate", type=float, default=0,
                        help="messages per second on a fixed schedule (raw client only; default 0: as fast as possible)")
    parser.add_argument("--client", choices=["raw", "paho"], default="raw", help="client implementation (default raw)")
    parser.add_argument("--idle", type=float, default=5.0,
                        help="seconds without a message after which the subscriber stops waiting (default 5)")
    parser.add_argument("--timeout", type=float, default=120.0, help="overall limit in seconds (default 120)")
    parser.add_argument("--tag", default="run", help="label copied into the result and client ids")
    args = parser.parse_args()
    if args.size < HEADER.size:
        parser.error(f"--size must be at least {HEADER.size}")
    if args.rate and args.client != "raw":
        parser.error("--rate needs --client raw")
    deadline = time.monotonic() + args.timeout
    # SIGTERM (from run.sh or `timeout`) exits normally, so the subscriber process is ended too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    ctx = mp.get_context("fork")
    parent_conn, child_conn = ctx.Pipe()
    events = (ctx.Event(), ctx.Event())
    warm_event, probe_event = events
    target = raw_subscriber if args.client == "raw" else paho_subscriber
    child = ctx.Process(target=target, args=(args, child_conn, events), daemon=True)
    child.start()
    if not parent_conn.poll(30) or parent_conn.recv() != "ready":
        raise SystemExit("the subscriber did not come up")

    publisher = RawPublisher(args) if args.client == "raw" else PahoPublisher(args)

    # 1. Probe until the path is up end to end.
    probe_deadline = time.monotonic() + 30
    while not probe_event.is_set():
        if time.monotonic() > probe_deadline:
            raise SystemExit("the path from broker A to broker B never delivered a probe message")
        publisher.probe()
        probe_event.wait(0.1)

    # 2. Warm-up.
    publisher.stream(TOPIC_WARM, args.warmup, deadline)
    warm_deadline = time.monotonic() + 20
    while not warm_event.is_set() and time.monotonic() < warm_deadline:
        publisher.idle(0.05)
    warm_complete = warm_event.is_set()

    # 3. Measured stream.
    first_send = time.monotonic_ns()
    publisher.stream(TOPIC_MEASURED, args.count, deadline)
    publish_end = time.monotonic_ns()
    parent_conn.send("published")
    while not parent_conn.poll(0.05):
        publisher.idle(0)
        if time.monotonic() > deadline + args.idle:
            raise SystemExit("the subscriber did not report in time")
    result = parent_conn.recv()
    child.join(5)
    publisher.close()

    unique = result["unique"]
    latencies = result["latencies"]
    elapsed_ns = result["last_receive"] - first_send if unique else 0
    ms = lambda ns: round(ns / 1e6, 3)  # noqa: E731
    print(json.dumps({
        "tag": args.tag,
        "client": args.client,
        "qos": args.qos,
        "rate": args.rate,
        "count": args.count,
        "size": args.size,
        "received": unique,
        "lost": args.count - unique,
        "duplicates": result["duplicates"],
        "msgs_per_s": round(unique / (elapsed_ns / 1e9), 1) if elapsed_ns > 0 else 0.0,
        "publish_msgs_per_s": round(args.count / ((publish_end - first_send) / 1e9), 1),
        "p50_ms": ms(percentile(latencies, 0.50)) if latencies else None,
        "p99_ms": ms(percentile(latencies, 0.99)) if latencies else None,
        "max_ms": ms(latencies[-1]) if latencies else None,
        "elapsed_s": round(elapsed_ns / 1e9, 3),
        "warmup_complete": warm_complete,
    }), flush=True)


if __name__ == "__main__":
    main()
