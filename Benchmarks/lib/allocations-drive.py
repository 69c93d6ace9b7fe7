#!/usr/bin/env python3
"""Drives envelopes through a running router one at a time and counts its allocations per
envelope with malloc-counter.so (see malloc-counter.c and allocations.sh beside this file).

Each envelope is sent only after the previous one came out of the router, so no batching
(socket reads that carry several messages, coalesced writes) makes the count depend on timing.
After a warm-up (caches, pools and connections of the path are built), WINDOWS windows of
COUNT envelopes each are measured: a snapshot of the router's counters (SIGUSR2) before and
after each window; the work a window's last envelope leaves behind (a PUBACK, a spool delete)
falls into the next window, as the previous window's fell into this one.

Prints one JSON line: the path, the per-window allocations per envelope, and their min (the
figure thresholds are held against, as SwiftNIO's allocation tests take the least of their
runs), max, bytes per envelope, and per window the allocations still live at its end minus at
its start, per envelope (steadily above 0: the path keeps memory per envelope).

Sources (--source):
  mqtt:PORT:QOS  publishes with `mosquitto_pub -l` to bench/m on the broker at PORT
  http:URL       POSTs an FCM HTTP v1 send request to URL (one keep-alive connection, bearer
                 token from $BENCH_BEARER)
Sinks (--sink), where the envelope is awaited:
  mqtt:PORT:QOS  `mosquitto_sub` on bench/# of the broker at PORT (the message sent)
  file:PATH      one more line in PATH (the router's file sink)
"""

import argparse
import http.client
import json
import os
import select
import signal
import subprocess
import sys
import time
import urllib.parse

PAYLOAD_SIZE = 100
FCM_REQUEST = (b'{"message": {"token": "bench-device-token-0001", "data": {"notification_id": "n1", '
               b'"reading": "21.5", "unit": "C"}}}')


def fail(message):
    print(f"allocations-drive: {message}", file=sys.stderr)
    sys.exit(1)


class Counter:
    """Reads the router's counters: SIGUSR2, then the line the handler appended."""

    def __init__(self, pid, path):
        self.pid, self.path, self.seen = pid, path, 0

    def snapshot(self, timeout=10.0):
        os.kill(self.pid, signal.SIGUSR2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(self.path) as file:
                    lines = file.read().splitlines()
            except FileNotFoundError:
                lines = []
            if len(lines) > self.seen:
                self.seen = len(lines)
                _, allocations, frees, allocated = (int(field) for field in lines[-1].split())
                return allocations, frees, allocated
            time.sleep(0.005)
        fail(f"no snapshot from process {self.pid} in {self.path} within {timeout:.0f} s "
             "(is it running with LD_PRELOAD=malloc-counter.so and MALLOC_COUNTER_FILE?)")


class MQTTSource:
    """`mosquitto_pub -l` on the router's source broker: one PAYLOAD_SIZE message per line,
    starting with its sequence number."""

    def __init__(self, port, qos):
        self.publisher = subprocess.Popen(
            ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-t", "bench/m", "-q", str(qos), "-l"],
            stdin=subprocess.PIPE)
        self.sequence = 0

    def send(self):
        self.sequence += 1
        line = b"%010d" % self.sequence
        self.publisher.stdin.write(line + b"x" * (PAYLOAD_SIZE - len(line)) + b"\n")
        self.publisher.stdin.flush()
        return self.sequence

    def close(self):
        self.publisher.stdin.close()
        self.publisher.kill()
        self.publisher.wait()


class HTTPSource:
    """One keep-alive connection POSTing the FCM send request to the webhook (bearer token from
    $BENCH_BEARER); a send returns once the webhook answered 200."""

    def __init__(self, url, timeout):
        parsed = urllib.parse.urlsplit(url)
        self.target = parsed.path
        self.headers = {"Content-Type": "application/json",
                        "Authorization": "Bearer " + os.environ.get("BENCH_BEARER", "bench")}
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)

    def send(self):
        self.connection.request("POST", self.target, body=FCM_REQUEST, headers=self.headers)
        response = self.connection.getresponse()
        body = response.read()
        if response.status != 200:
            fail(f"the webhook answered {response.status}: {body[:200]!r}")
        return None

    def close(self):
        self.connection.close()


class MQTTSink:
    """`mosquitto_sub` on the router's sink broker; waits for the message a source sent."""

    def __init__(self, port, qos, timeout):
        self.timeout = timeout
        self.subscriber = subprocess.Popen(
            ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", "bench/#", "-q", str(qos)],
            stdout=subprocess.PIPE)
        self.pending = b""

    def _receive(self, timeout):
        """The sequence number of the next message, or None after timeout seconds. Reads the
        pipe itself: a buffered reader could hold a line that select() then never reports."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.subscriber.stdout], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                return None
            chunk = os.read(self.subscriber.stdout.fileno(), 65536)
            if not chunk:
                fail("mosquitto_sub exited")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return int(line[:10])

    def probe(self, timeout):
        return self._receive(timeout) is not None

    def settle(self):
        """Drains the probes still on their way."""
        while self._receive(0.3) is not None:
            pass

    def await_next(self, sequence):
        while True:
            received = self._receive(self.timeout)
            if received is None:
                fail(f"message {sequence} did not come through within {self.timeout:.0f} s")
            if received == sequence:
                return

    def close(self):
        self.subscriber.kill()
        self.subscriber.wait()


class FileSink:
    """The router's file sink: waits for one more line per envelope. Polls, reading only what
    is new (its CPU would otherwise grow with the file and compete with the router's)."""

    def __init__(self, path, timeout):
        self.path, self.timeout = path, timeout
        self.output = None
        self.written = self.expected = 0

    def _read(self):
        if self.output is None and os.path.exists(self.path):
            self.output = open(self.path, "rb")
        if self.output is not None:
            self.written += self.output.read().count(b"\n")

    def probe(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read()
            if self.written:
                return True
            time.sleep(0.005)
        return False

    def settle(self):
        """Until no line came for 0.3 s: the probes that made it are written."""
        while True:
            before = self.written
            time.sleep(0.3)
            self._read()
            if self.written == before:
                self.expected = self.written
                return

    def await_next(self, _sequence):
        self.expected += 1
        deadline = time.monotonic() + self.timeout
        while True:
            self._read()
            if self.written >= self.expected:
                return
            if time.monotonic() > deadline:
                fail(f"the file sink wrote {self.written} of {self.expected} lines within {self.timeout:.0f} s")
            time.sleep(0.0005)

    def close(self):
        if self.output is not None:
            self.output.close()


class Path:
    def __init__(self, source, sink, timeout):
        self.source, self.sink, self.timeout = source, sink, timeout

    def connect(self):
        """Sends until one envelope makes it through (the router's instances are connected and
        subscribed end to end), then lets the rest of those probes arrive."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            self.source.send()
            if self.sink.probe(0.2):
                self.sink.settle()
                return
        fail(f"nothing came through the router within {self.timeout:.0f} s")

    def send_one(self):
        self.sink.await_next(self.source.send())

    def close(self):
        self.source.close()
        self.sink.close()


def endpoint(spec, kinds, timeout):
    """mqtt:PORT:QOS, http:URL or file:PATH."""
    kind, _, rest = spec.partition(":")
    if kind not in kinds:
        fail(f"'{spec}': expected one of {', '.join(k + ':…' for k in kinds)}")
    if kind == "mqtt":
        port, qos = rest.split(":")
        return MQTTSource(int(port), int(qos)) if "http" in kinds else MQTTSink(int(port), int(qos), timeout)
    if kind == "http":
        return HTTPSource(rest, timeout)
    return FileSink(rest, timeout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pid", type=int, required=True, help="the router's process id")
    parser.add_argument("--counter-file", required=True, help="its MALLOC_COUNTER_FILE")
    parser.add_argument("--name", required=True, help="the path's name in the output")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--count", type=int, default=1000, help="envelopes per window")
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds for any one envelope")
    parser.add_argument("--source", required=True, help="mqtt:PORT:QOS or http:URL")
    parser.add_argument("--sink", required=True, help="mqtt:PORT:QOS or file:PATH")
    options = parser.parse_args()

    path = Path(endpoint(options.source, ("mqtt", "http"), options.timeout),
                endpoint(options.sink, ("mqtt", "file"), options.timeout), options.timeout)
    counter = Counter(options.pid, options.counter_file)
    per_envelope, bytes_per_envelope, retained = [], [], []
    try:
        path.connect()
        for _ in range(options.warmup):
            path.send_one()
        before = counter.snapshot()
        for _ in range(options.windows):
            for _ in range(options.count):
                path.send_one()
            after = counter.snapshot()
            per_envelope.append(round((after[0] - before[0]) / options.count, 2))
            retained.append(round(((after[0] - after[1]) - (before[0] - before[1])) / options.count, 2))
            bytes_per_envelope.append(round((after[2] - before[2]) / options.count))
            before = after
    finally:
        path.close()
    print(json.dumps({
        "path": options.name, "count": options.count, "windows": options.windows, "warmup": options.warmup,
        "allocations_per_envelope": min(per_envelope), "max": max(per_envelope), "per_window": per_envelope,
        "bytes_per_envelope": min(bytes_per_envelope), "retained_per_envelope": retained}))


if __name__ == "__main__":
    main()
