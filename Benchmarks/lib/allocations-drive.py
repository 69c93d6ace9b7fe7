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

Modes:
  mqtt  PUB_PORT SUB_PORT QOS: publishes with `mosquitto_pub -l` to bench/m on PUB_PORT and
        waits for each message from `mosquitto_sub` on SUB_PORT (the router bridges them).
  push  URL OUT_FILE: POSTs an FCM HTTP v1 send request to URL (one keep-alive connection,
        bearer token from $BENCH_BEARER) and waits for each envelope's line in OUT_FILE (the
        router's file sink).
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


class MQTTPath:
    """mosquitto_pub -l on the router's source broker, mosquitto_sub on its sink broker."""

    def __init__(self, pub_port, sub_port, qos, timeout):
        self.timeout = timeout
        self.subscriber = subprocess.Popen(
            ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(sub_port), "-t", "bench/#", "-q", str(qos)],
            stdout=subprocess.PIPE)
        self.publisher = subprocess.Popen(
            ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(pub_port), "-t", "bench/m", "-q", str(qos), "-l"],
            stdin=subprocess.PIPE)
        self.sequence = 0
        self.pending = b""

    def _publish(self):
        self.sequence += 1
        line = b"%010d" % self.sequence
        self.publisher.stdin.write(line + b"x" * (PAYLOAD_SIZE - len(line)) + b"\n")
        self.publisher.stdin.flush()

    def _receive(self, timeout):
        """The sequence number of the next message, or None after timeout seconds. Reads the
        pipe itself: a buffered reader could hold a line that select() then never reports."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self.subscriber.stdout], [], [], max(remaining, 0))
            if not ready:
                return None
            chunk = os.read(self.subscriber.stdout.fileno(), 65536)
            if not chunk:
                fail("mosquitto_sub exited")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return int(line[:10])

    def connect(self):
        """Publishes until one message makes it through (the router and both clients are
        subscribed), then drains what else arrives."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            self._publish()
            if self._receive(0.2) is not None:
                while self._receive(0.3) is not None:
                    pass
                return
        fail(f"no message came through the router within {self.timeout:.0f} s")

    def send_one(self):
        self._publish()
        while True:
            received = self._receive(self.timeout)
            if received is None:
                fail(f"message {self.sequence} did not come through within {self.timeout:.0f} s")
            if received == self.sequence:
                return

    def close(self):
        self.publisher.stdin.close()
        for process in (self.publisher, self.subscriber):
            process.kill()
            process.wait()


class PushPath:
    """One keep-alive HTTP connection to the webhook; the file sink's lines are the output."""

    def __init__(self, url, out_file, timeout):
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port, self.target = parsed.hostname, parsed.port, parsed.path
        self.out_file, self.timeout = out_file, timeout
        self.headers = {"Content-Type": "application/json",
                        "Authorization": "Bearer " + os.environ.get("BENCH_BEARER", "bench")}
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        self.sent = 0
        self.written = 0
        self.output = None

    def _post(self):
        self.connection.request("POST", self.target, body=FCM_REQUEST, headers=self.headers)
        response = self.connection.getresponse()
        body = response.read()
        if response.status != 200:
            fail(f"the webhook answered {response.status}: {body[:200]!r}")
        self.sent += 1

    def _await_written(self):
        """Until the sink wrote a line per envelope sent. Reads only what is new (this polls,
        and its CPU would otherwise grow with the file and compete with the router's)."""
        deadline = time.monotonic() + self.timeout
        while True:
            if self.output is None and os.path.exists(self.out_file):
                self.output = open(self.out_file, "rb")
            if self.output is not None:
                self.written += self.output.read().count(b"\n")
            if self.written >= self.sent:
                return
            if time.monotonic() > deadline:
                fail(f"the file sink wrote {self.written} of {self.sent} envelopes within {self.timeout:.0f} s")
            time.sleep(0.0005)

    def connect(self):
        self.send_one()

    def send_one(self):
        self._post()
        self._await_written()

    def close(self):
        self.connection.close()
        if self.output is not None:
            self.output.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pid", type=int, required=True, help="the router's process id")
    parser.add_argument("--counter-file", required=True, help="its MALLOC_COUNTER_FILE")
    parser.add_argument("--name", required=True, help="the path's name in the output")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--count", type=int, default=1000, help="envelopes per window")
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds for any one envelope")
    parser.add_argument("mode", choices=["mqtt", "push"])
    parser.add_argument("arguments", nargs="+")
    options = parser.parse_args()

    if options.mode == "mqtt":
        pub_port, sub_port, qos = (int(value) for value in options.arguments)
        path = MQTTPath(pub_port, sub_port, qos, options.timeout)
    else:
        url, out_file = options.arguments
        path = PushPath(url, out_file, options.timeout)
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
