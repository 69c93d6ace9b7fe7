#!/usr/bin/env python3
"""Slow-loris attack benchmark (issue 33): does the router keep serving while hundreds of
strangers trickle request heads at it?

Two modes, each against one router process it starts itself:

* default (HTTP): a `push` instance (webhook on 127.0.0.1, a free port, bearer token
  `${PUSH_BEARER}`, default limits) routed to a `core` file sink, and the admin port on
  127.0.0.1. The attack: ~600 slow connections on the webhook and ~300 on the admin port,
  spread over the source addresses 127.0.0.2 … 127.0.0.41, each sending an incomplete request
  head one byte every ~2 s; whatever the router closes is opened again after --reopen-delay.
  Meanwhile: 100 authorized `POST /push` requests from 127.0.0.1 (a fresh connection each, 5 s
  timeout, spread over the attack), counted when answered 200 at the first (and only) try, and
  looked for in the file sink afterwards.
* `--sip`: a `sip` instance (listening on 127.0.0.1, a free port, no registration) whose
  `messages` port goes to a `core` file sink. The attack: ~300 connections on its TCP port
  from the same addresses, each trickling an incomplete SIP request head one byte every ~2 s.
  The legitimate load is SIPp sending MESSAGEs over TCP with examples/sip-pager/message.xml
  (`-m 200 -r 10`, one connection per message with `-t tn` by default): the share answered 200
  (SIPp's statistics) and the number in the file sink.

In both modes, during the attack: `GET /healthz` on the admin port every 200 ms (fresh
connection from 127.0.0.1; latency max and p99; a probe over 1 s or failed is a miss), and
every second the router's open descriptors (/proc/PID/fd) and RSS (VmRSS). At the end the
router's counters from `GET /metrics`, then SIGTERM and its exit status.

Targets (a miss makes the exit status 1): HTTP mode ≥ 95/100 served at the first try and every
served one in the sink; SIP mode ≥ 95 % of the MESSAGEs answered 200 and every answered one in
the sink; both modes: /healthz always under 1 s, descriptors below the router's soft open-file
limit, RSS under 300 MiB, exit status 0 on SIGTERM. Exit status 2: the run could not be made
(router did not start, SIPp missing, …).

Usage (from anywhere; Python 3 standard library only):

    python3 Benchmarks/attack/slowloris.py                       # HTTP mode, 40 s, debug build
    python3 Benchmarks/attack/slowloris.py --sip                 # SIP over TCP
    python3 Benchmarks/attack/slowloris.py --router .build/release/switchyard --plugins Plugins
    python3 Benchmarks/attack/slowloris.py --seconds 10 --webhook-connections 60 --admin-connections 30   # a quick look

What the attack becomes at the default limits: there are more slow connections than slots
(`max_connections` 256 on the webhook and on the sip TCP listener, 64 on the admin port), so
each new connection the router accepts takes the place of the oldest one still waiting for a
head, which is closed, and reopened by this script after --reopen-delay (default 0.5 s). The
attack is then a steady stream of connections (the summary's "opened (N/s)"), most closed
before their second byte, rather than connections held until `header_timeout`; with fewer
connections than slots (`--webhook-connections 60`) it is the other case, every one closed by
the head timeout (408). This script runs on the same machine and takes its share of the CPU;
the summary says how much, and how much other processes took.

Paths given on the command line are taken from the current directory. The script makes its own temporary folder (plugins/ with copies of the plugins it needs, the
route file, the sink, the router's log, SIPp's files), runs the router and SIPp with that folder
as their working directory, and removes it at the end, also after Ctrl-C, SIGTERM or an error
(`--keep` keeps it; `--log FILE` copies the router's log out first). The router inherits this
script's open-file limit. Needs the source addresses 127.0.0.2 … (Linux routes all of
127.0.0.0/8 to the loopback interface).
"""

import argparse
import errno
import heapq
import http.client
import json
import math
import os
import random
import re
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)


class Stop(Exception):
    """Raised by the SIGTERM handler so that the clean-up runs."""


def log(message):
    print(f"[slowloris {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port(udp_too=False):
    """A port free on 127.0.0.1 right now (for TCP, and for UDP too when asked)."""
    for _ in range(50):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        port = tcp.getsockname()[1]
        try:
            if udp_too:
                udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                try:
                    udp.bind(("127.0.0.1", port))
                except OSError:
                    continue
                finally:
                    udp.close()
            return port
        finally:
            tcp.close()
    raise RuntimeError("no free port")


# --------------------------------------------------------------------------------------------
# The attack: every slow connection in one selector loop (one thread).


class Group:
    """Slow connections of one kind against one port."""

    def __init__(self, name, port, count, prefix, pad):
        self.name, self.port, self.count = name, port, count
        self.prefix, self.pad = prefix, pad
        self.open = 0  # connected now (from our side: the kernel may still hold it in the backlog)
        self.opened = 0  # connections that completed the TCP handshake
        self.closed_by_peer = 0  # closed or reset by the router
        self.connect_failures = 0  # refused, timed out, no port left
        self.bytes_sent = 0
        self.answers = Counter()  # first line of what the router answered before closing
        self.open_samples = []  # `open` once a second

    def byte_at(self, index):
        if index < len(self.prefix):
            return self.prefix[index : index + 1]
        index -= len(self.prefix)
        return self.pad[index % len(self.pad) : index % len(self.pad) + 1]


class Slot:
    __slots__ = ("group", "source", "sock", "state", "position", "generation", "received")

    def __init__(self, group, source):
        self.group, self.source = group, source
        self.sock, self.state, self.position, self.generation = None, "idle", 0, 0
        self.received = b""


class Attack(threading.Thread):
    """Opens `count` connections per group from the source addresses in turn, sends one byte of
    an endless, never complete head every `interval` (±20 %) on each, and opens again, after
    `reopen_delay` (±20 %), whatever the router closes. Bounded: one socket per slot, a 5 s
    connect timeout, reads of at most 4 KiB that are thrown away (the first line is kept)."""

    def __init__(self, groups, sources, interval, reopen_delay, ramp=2.0):
        super().__init__(name="attack", daemon=True)
        self.groups, self.interval, self.reopen_delay, self.ramp = groups, interval, reopen_delay, ramp
        self.slots = []
        for group in groups:
            for index in range(group.count):
                self.slots.append(Slot(group, sources[index % len(sources)]))
        random.shuffle(self.slots)
        self.selector = selectors.DefaultSelector()
        self.timers = []  # (due, sequence, slot, generation, action)
        self.sequence = 0
        self.stopping = threading.Event()
        self.error = None

    def schedule(self, delay, slot, action):
        self.sequence += 1
        heapq.heappush(self.timers, (time.monotonic() + delay, self.sequence, slot, slot.generation, action))

    def jitter(self, seconds):
        return seconds * random.uniform(0.8, 1.2)

    def run(self):
        try:
            for index, slot in enumerate(self.slots):
                self.schedule(self.ramp * index / max(1, len(self.slots)), slot, "open")
            while not self.stopping.is_set():
                timeout = 0.1
                if self.timers:
                    timeout = max(0.0, min(timeout, self.timers[0][0] - time.monotonic()))
                for key, events in self.selector.select(timeout):
                    self.ready(key.data, events)
                now = time.monotonic()
                while self.timers and self.timers[0][0] <= now:
                    _, _, slot, generation, action = heapq.heappop(self.timers)
                    if generation != slot.generation:
                        continue
                    if action == "open":
                        self.open(slot)
                    elif action == "send":
                        self.send(slot)
                    elif action == "connect-timeout" and slot.state == "connecting":
                        slot.group.connect_failures += 1
                        self.drop(slot, reopen=True)
        except Exception as error:  # reported by the main thread
            self.error = error
        finally:
            for slot in self.slots:
                self.drop(slot, reopen=False)
            self.selector.close()

    def open(self, slot):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            # The port is chosen at connect(), per destination: 40 addresses × the ephemeral range.
            sock.setsockopt(socket.SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1)
            sock.bind((slot.source, 0))
            result = sock.connect_ex(("127.0.0.1", slot.group.port))
        except OSError as error:
            result = error.errno
        if result not in (0, errno.EINPROGRESS):
            sock.close()
            slot.group.connect_failures += 1
            slot.generation += 1
            self.schedule(self.jitter(self.reopen_delay), slot, "open")
            return
        slot.sock, slot.state, slot.position, slot.received = sock, "connecting", 0, b""
        slot.generation += 1
        self.selector.register(sock, selectors.EVENT_WRITE, slot)
        self.schedule(5.0, slot, "connect-timeout")

    def ready(self, slot, events):
        if slot.sock is None:
            return
        if slot.state == "connecting":
            error = slot.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                slot.group.connect_failures += 1
                self.drop(slot, reopen=True)
                return
            slot.state = "open"
            slot.group.open += 1
            slot.group.opened += 1
            slot.generation += 1  # cancels the connect timeout
            self.selector.modify(slot.sock, selectors.EVENT_READ, slot)
            self.send(slot)
            return
        try:
            data = slot.sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            if len(slot.received) < 200:
                slot.received += data[:200]
            return
        self.closed_by_peer(slot)

    def closed_by_peer(self, slot):
        slot.group.closed_by_peer += 1
        first = slot.received.split(b"\r\n", 1)[0].decode("latin-1", "replace")[:40]
        slot.group.answers[first or "(closed without an answer)"] += 1
        self.drop(slot, reopen=True)

    def send(self, slot):
        if slot.state != "open":
            return
        try:
            sent = slot.sock.send(slot.group.byte_at(slot.position), socket.MSG_NOSIGNAL)
        except BlockingIOError:
            sent = 0
        except OSError:
            self.closed_by_peer(slot)
            return
        slot.position += sent
        slot.group.bytes_sent += sent
        self.schedule(self.jitter(self.interval), slot, "send")

    def drop(self, slot, reopen):
        if slot.sock is not None:
            try:
                self.selector.unregister(slot.sock)
            except (KeyError, ValueError):
                pass
            slot.sock.close()
            slot.sock = None
        if slot.state == "open":
            slot.group.open -= 1
        slot.state = "idle"
        slot.generation += 1
        if reopen and not self.stopping.is_set():
            self.schedule(self.jitter(self.reopen_delay), slot, "open")


# --------------------------------------------------------------------------------------------
# Legitimate load and probes.


def http_exchange(port, request, timeout, source=None):
    """Sends `request` on a fresh connection to 127.0.0.1:port; returns (status or None, seconds,
    error). The whole exchange (connect, send, answer head) must fit in `timeout`."""
    start = time.monotonic()
    deadline = start + timeout
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if source:
            sock.bind((source, 0))
        sock.settimeout(timeout)
        sock.connect(("127.0.0.1", port))
        sock.sendall(request)
        received = b""
        while b"\r\n" not in received:
            left = deadline - time.monotonic()
            if left <= 0:
                return None, time.monotonic() - start, "timed out"
            sock.settimeout(left)
            chunk = sock.recv(4096)
            if not chunk:
                return None, time.monotonic() - start, "closed without an answer"
            received += chunk
        line = received.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        return status, time.monotonic() - start, None if status else f"bad status line {line!r}"
    except socket.timeout:
        return None, time.monotonic() - start, "timed out"
    except OSError as error:
        return None, time.monotonic() - start, error.strerror or str(error)
    finally:
        sock.close()


class Poster:
    """`count` POST /push requests spread evenly over [start, end], each in its own thread
    (a fresh connection from 127.0.0.1, 5 s for the whole exchange, one try)."""

    def __init__(self, port, bearer, run_id, count, timeout=5.0):
        self.port, self.bearer, self.run_id, self.count, self.timeout = port, bearer, run_id, count, timeout
        self.results = {}  # token -> (status, seconds, error)
        self.lock = threading.Lock()
        self.threads = []

    def token(self, index):
        return f"legit-{self.run_id}-{index:03d}"

    def post(self, index):
        token = self.token(index)
        body = json.dumps({"token": token, "data": {"n": str(index), "run": self.run_id}}).encode()
        request = (
            f"POST /push HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nAuthorization: Bearer {self.bearer}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode() + body
        result = http_exchange(self.port, request, self.timeout)
        with self.lock:
            self.results[token] = result

    def run(self, start, end, stopping):
        gap = (end - start) / max(1, self.count - 1)
        for index in range(self.count):
            due = start + index * gap
            while not stopping.is_set() and time.monotonic() < due:
                time.sleep(min(0.05, due - time.monotonic()))
            if stopping.is_set():
                break
            thread = threading.Thread(target=self.post, args=(index,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def join(self):
        for thread in self.threads:
            thread.join(self.timeout + 2)


class Prober(threading.Thread):
    """GET /healthz every `period` on a fresh connection; a miss is a failure or over `limit`."""

    def __init__(self, port, period=0.2, limit=1.0, timeout=5.0):
        super().__init__(name="healthz", daemon=True)
        self.port, self.period, self.limit, self.timeout = port, period, limit, timeout
        self.latencies, self.misses, self.errors = [], 0, Counter()
        self.stopping = threading.Event()

    def run(self):
        request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nConnection: close\r\n\r\n".encode()
        due = time.monotonic()
        while not self.stopping.is_set():
            status, seconds, error = http_exchange(self.port, request, self.timeout)
            self.latencies.append(seconds)
            if status != 200 or seconds >= self.limit:
                self.misses += 1
                self.errors[error or (f"HTTP {status}" if status != 200 else "over 1 s")] += 1
            due = max(due + self.period, time.monotonic())
            self.stopping.wait(max(0.0, due - time.monotonic()))


class Sampler(threading.Thread):
    """Once a second: the router's open descriptors and RSS; the groups' open counts; and the
    CPU time of every other process on the machine (the run may share it with a compile)."""

    def __init__(self, pid, groups):
        super().__init__(name="sampler", daemon=True)
        self.pid, self.groups = pid, groups
        self.descriptors, self.rss_kib = [], []
        self.first, self.last = {}, {}  # pid -> (name, CPU seconds) when first and last seen
        self.stopping = threading.Event()

    def sample(self):
        try:
            self.descriptors.append(len(os.listdir(f"/proc/{self.pid}/fd")))
            with open(f"/proc/{self.pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        self.rss_kib.append(int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError):
            pass
        for group in self.groups:
            group.open_samples.append(group.open)
        tick = os.sysconf("SC_CLK_TCK")
        initial = not self.last
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in (self.pid, os.getpid()):
                continue
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    text = stat.read()
            except OSError:
                continue
            fields = text[text.rfind(")") + 2 :].split()
            seen = (text[text.find("(") + 1 : text.rfind(")")], (int(fields[11]) + int(fields[12])) / tick)
            self.first.setdefault(entry, seen if initial else (seen[0], 0.0))  # new since the start: all its time
            self.last[entry] = seen

    def others(self, count=4):
        """The names of the other processes that used the most CPU while sampling, with seconds."""
        used = Counter()
        for entry, (name, seconds) in self.last.items():
            used[name] += seconds - self.first[entry][1]
        return [(name, seconds) for name, seconds in used.most_common(count) if seconds >= 0.5]

    def run(self):
        while not self.stopping.is_set():
            self.sample()
            self.stopping.wait(1.0)


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def machine_cpu():
    """(busy, total) seconds of CPU of the whole machine (every core) since it started."""
    with open("/proc/stat") as stat:
        values = [int(value) for value in stat.readline().split()[1:8]]
    idle = values[3] + values[4]
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(values) - idle) / tick, sum(values) / tick


class CPUAccount:
    """Where the machine's CPU went between start() and stop(): the router, this script, SIPp
    (a child reaped before stop()), and everything else (a compile sharing the machine)."""

    def start(self, router_pid):
        self.pid = router_pid
        self.router = cpu_seconds(router_pid)
        self.machine = machine_cpu()
        times = os.times()
        self.script = times.user + times.system
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.children = children.ru_utime + children.ru_stime
        self.began = time.monotonic()

    def stop(self):
        self.router = cpu_seconds(self.pid) - self.router
        busy, total = machine_cpu()
        self.busy, self.total = busy - self.machine[0], total - self.machine[1]
        times = os.times()
        self.script = times.user + times.system - self.script
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.children = children.ru_utime + children.ru_stime - self.children
        self.duration = time.monotonic() - self.began
        self.others = max(0.0, self.busy - self.router - self.script - self.children)

    def line(self):
        return (f"CPU                 {self.duration:.1f} s of attack on {os.cpu_count()} cores: machine {100 * self.busy / max(1e-9, self.total):.0f} % busy;"
                f" router {self.router:.1f} s, this script {self.script:.1f} s"
                f"{f', SIPp {self.children:.1f} s' if self.children >= 0.05 else ''}, other processes {self.others:.1f} s")


def soft_open_file_limit(pid):
    with open(f"/proc/{pid}/limits") as limits:
        for line in limits:
            if line.startswith("Max open files"):
                value = line.split()[3]
                return None if value == "unlimited" else int(value)
    return None


def metrics(admin_port):
    """The admin port's /metrics as {name-or-plugin-name: value} (plugin metrics by their
    `name` label, the others by their full name)."""
    connection = http.client.HTTPConnection("127.0.0.1", admin_port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode("utf-8", "replace")
    finally:
        connection.close()
    values = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = re.match(r'^(\w+)(?:\{([^}]*)\})?\s+(\S+)$', line)
        if not match:
            continue
        name, labels, value = match.groups()
        label = dict(re.findall(r'(\w+)="([^"]*)"', labels or ""))
        if name == "switchyard_plugin_metric" and "name" in label:
            name = f"{label.get('instance', '?')}.{label['name']}"
        try:
            values[name] = float(value)
        except ValueError:
            pass
    return values


def percentile(values, share):
    if not values:
        return float("nan")
    ordered = sorted(values)  # nearest rank
    return ordered[max(0, min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1))]


def log_summary(path):
    """(lines, Counter of levels, the most frequent messages, most lines in one second, events
    the router said it did not log)."""
    levels, messages, seconds = Counter(), Counter(), Counter()
    lines = unlogged = 0
    try:
        with open(path, errors="replace") as router_log:
            for line in router_log:
                lines += 1
                fields = line.split(" ", 2)
                if len(fields) >= 2:
                    levels[fields[1]] += 1
                    seconds[fields[0]] += 1
                text = line.rstrip("\n")
                more = re.search(r"\(and (\d+) more in the last second, not logged\)$", text)
                if more:
                    unlogged += int(more.group(1))
                    text = text[: more.start()].rstrip()
                text = text.split("] ", 1)[1] if "] " in text else text
                text = re.sub(r"\d+(\.\d+)*", "N", text)
                messages[text[:110]] += 1
    except FileNotFoundError:
        pass
    return lines, levels, messages.most_common(8), max(seconds.values(), default=0), unlogged


# --------------------------------------------------------------------------------------------
# The run.


class Run:
    def __init__(self, args):
        self.args = args
        self.tmp = None
        self.router = None
        self.router_log = None
        self.sipp = None
        self.threads = []

    # -- set-up ---------------------------------------------------------------------------

    def prepare(self, plugin_names):
        self.tmp = tempfile.mkdtemp(prefix="slowloris-")
        os.chmod(self.tmp, 0o755)
        plugins = os.path.join(self.tmp, "plugins")
        os.mkdir(plugins, 0o755)
        os.chmod(plugins, 0o755)  # the loader refuses a folder others can write to
        for name in plugin_names:
            source = os.path.join(self.args.plugins, f"lib{name}.so")
            if not os.path.isfile(source):
                raise SystemExit(f"slowloris: {source} is missing (build the plugins, or name another --plugins)")
            target = os.path.join(plugins, f"lib{name}.so")
            shutil.copyfile(source, target)
            os.chmod(target, 0o755)
        return plugins

    def start_router(self, routes, plugins, environment):
        self.router_log = os.path.join(self.tmp, "router.log")
        validate = subprocess.run(
            [self.args.router, "validate", routes, "--plugins", plugins],
            cwd=self.tmp, env=environment, capture_output=True, text=True, timeout=120)
        if validate.returncode != 0:
            raise SystemExit(f"slowloris: the route file does not validate:\n{validate.stdout}{validate.stderr}")
        with open(self.router_log, "wb") as output:
            self.router = subprocess.Popen(
                [self.args.router, "run", routes, "--plugins", plugins, "--admin", "127.0.0.1:0"],
                cwd=self.tmp, env=environment, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                start_new_session=True)
        deadline = time.monotonic() + 60
        admin_port = None
        while time.monotonic() < deadline:
            if self.router.poll() is not None:
                raise SystemExit(f"slowloris: the router exited with {self.router.returncode} at start:\n{self.tail()}")
            with open(self.router_log, errors="replace") as router_log:
                match = re.search(r"address=([\d.]+):(\d+).*admin listening", router_log.read())
            if match:
                admin_port = int(match.group(2))
                break
            time.sleep(0.1)
        if admin_port is None:
            raise SystemExit(f"slowloris: no 'admin listening' line within 60 s:\n{self.tail()}")
        while time.monotonic() < deadline:  # ready: every instance listening
            status, _, _ = http_exchange(admin_port, b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 5)
            if status == 200:
                return admin_port
            time.sleep(0.2)
        raise SystemExit(f"slowloris: /readyz did not answer 200 within 60 s:\n{self.tail()}")

    def tail(self, lines=20):
        try:
            with open(self.router_log, errors="replace") as router_log:
                return "".join(router_log.readlines()[-lines:])
        except (OSError, TypeError):
            return ""

    def stop_router(self):
        """SIGTERM; the exit status, or None when it had to be killed after 30 s."""
        if self.router is None or self.router.poll() is not None:
            return None if self.router is None else self.router.returncode
        self.router.send_signal(signal.SIGTERM)
        try:
            return self.router.wait(30)
        except subprocess.TimeoutExpired:
            self.router.kill()
            self.router.wait()
            return None

    def cleanup(self):
        for thread in self.threads:
            stopping = getattr(thread, "stopping", None)
            if stopping is not None:
                stopping.set()
        for thread in self.threads:
            thread.join(5)
        if self.sipp is not None and self.sipp.poll() is None:
            self.sipp.kill()
            self.sipp.wait()
        if self.router is not None and self.router.poll() is None:
            self.stop_router()
        if self.tmp and self.router_log and self.args.log:
            try:
                shutil.copyfile(self.router_log, self.args.log)
                log(f"router log copied to {self.args.log}")
            except OSError as error:
                log(f"could not copy the router log: {error}")
        if self.tmp:
            if self.args.keep:
                log(f"kept {self.tmp}")
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)

    # -- shared parts of both modes -------------------------------------------------------

    def sources(self):
        return [f"127.0.0.{2 + index}" for index in range(self.args.addresses)]

    def attack(self, groups):
        attack = Attack(groups, self.sources(), self.args.interval, self.args.reopen_delay)
        self.threads.append(attack)
        return attack

    def monitor(self, admin_port, groups):
        prober = Prober(admin_port)
        sampler = Sampler(self.router.pid, groups)
        self.threads += [prober, sampler]
        return prober, sampler

    def finish(self, attack, prober, sampler, admin_port):
        """Stops the attack and the probes; returns the router's metrics and a last sample."""
        prober.stopping.set()
        sampler.stopping.set()
        prober.join(10)
        sampler.join(5)
        sampler.sample()
        attack.stopping.set()
        attack.join(10)
        if attack.error:
            raise attack.error
        time.sleep(1.0)
        try:
            values = metrics(admin_port)
        except (OSError, http.client.HTTPException) as error:
            log(f"GET /metrics failed: {error}")
            values = {}
        return values

    def common_lines(self, prober, sampler, limit, exit_status, account, groups):
        """Summary lines and misses shared by both modes."""
        lines, misses = [], []
        latencies = prober.latencies
        worst = max(latencies, default=float("nan"))
        p99 = percentile(latencies, 0.99)
        ok = prober.misses == 0 and latencies and worst < 1.0
        if not ok:
            misses.append("/healthz")
        errors = ", ".join(f"{what} ×{count}" for what, count in prober.errors.most_common(3))
        lines.append(
            f"/healthz            max {worst * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, misses {prober.misses}/{len(latencies)}"
            f"{' (' + errors + ')' if errors else ''}   [target: always < 1 s] {'met' if ok else 'MISSED'}")
        most = max(sampler.descriptors, default=0)
        ok = limit is None or most < limit
        if not ok:
            misses.append("descriptors")
        lines.append(f"descriptors         max {most} (soft open-file limit {limit or 'unlimited'})   [target: below the limit] {'met' if ok else 'MISSED'}")
        rss = max(sampler.rss_kib, default=0) / 1024
        ok = rss < 300
        if not ok:
            misses.append("RSS")
        lines.append(f"RSS                 max {rss:.1f} MiB   [target: < 300 MiB] {'met' if ok else 'MISSED'}")
        ok = exit_status == 0
        if not ok:
            misses.append("exit status")
        lines.append(f"router exit         {'killed after 30 s' if exit_status is None else exit_status} on SIGTERM   [target: 0] {'met' if ok else 'MISSED'}")
        lines.append(account.line())
        for group in groups:
            kept = group.open_samples[3:] or group.open_samples
            lines.append(
                f"attack {group.name:<12} {group.count} slots: open min {min(kept, default=0)} / mean {sum(kept) / max(1, len(kept)):.0f}"
                f" after the ramp; {group.opened} opened ({group.opened / max(1e-9, account.duration):.0f}/s), {group.closed_by_peer} closed by the router, {group.connect_failures} failed to connect,"
                f" {group.bytes_sent} bytes trickled")
            answers = ", ".join(f"{answer!r} ×{count}" for answer, count in group.answers.most_common(4))
            if answers:
                lines.append(f"{'':20}router's last words: {answers}")
        count, levels, common, peak, unlogged = log_summary(self.router_log)
        lines.append(f"router log          {count} lines ({', '.join(f'{level} {n}' for level, n in levels.most_common())}), at most {peak} in one second;"
                     f" {unlogged} more events reported as not logged")
        for text, n in common[:6]:
            lines.append(f"{'':20}{n:>6} × {text}")
        busy = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in sampler.others()) or "none over 0.5 s"
        lines.append(f"machine             other processes' CPU during the run: {busy}; load average at the end {open('/proc/loadavg').read().split()[0]}")
        return lines, misses

    def counter_lines(self, values, names):
        out = []
        for label, key in names:
            value = values.get(key)
            out.append(f"  {label:<44} {'absent (never counted)' if value is None else int(value)}")
        return out

    # -- HTTP mode ------------------------------------------------------------------------

    def run_http(self):
        args = self.args
        plugins = self.prepare(["core", "push"])
        webhook_port = free_port()
        bearer = f"bench-{os.getpid()}-{random.randrange(1 << 30)}"
        routes = os.path.join(self.tmp, "routes.yaml")
        with open(routes, "w") as route_file:
            route_file.write(
                "# Written by Benchmarks/attack/slowloris.py: the webhook with its default limits, to a file.\n"
                "instances:\n"
                "  push:\n"
                "    plugin: push\n"
                f'    listen: "127.0.0.1:{webhook_port}"\n'
                '    auth: { bearer_token: "${PUSH_BEARER}" }\n'
                f'  sink: {{ plugin: core, file: {{ path: "{os.path.join(self.tmp, "sink.jsonl")}" }} }}\n'
                "routes:\n"
                "  - { from: push.messages, to: sink.write }\n")
        environment = dict(os.environ, PUSH_BEARER=bearer)
        admin_port = self.start_router(routes, plugins, environment)
        limit = soft_open_file_limit(self.router.pid)
        log(f"router {self.router.pid} ready: webhook 127.0.0.1:{webhook_port}, admin 127.0.0.1:{admin_port}, open-file limit {limit}")

        http_pad = b"X-Slow: a\r\n"
        groups = [
            Group("webhook", webhook_port, args.webhook_connections,
                  f"POST /push HTTP/1.1\r\nHost: 127.0.0.1:{webhook_port}\r\n".encode(), http_pad),
            Group("admin", admin_port, args.admin_connections,
                  f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{admin_port}\r\n".encode(), http_pad),
        ]
        attack = self.attack(groups)
        prober, sampler = self.monitor(admin_port, groups)
        poster = Poster(webhook_port, bearer, f"{os.getpid()}", args.posts)
        account = CPUAccount()
        account.start(self.router.pid)
        start = time.monotonic()
        log(f"attack: {args.webhook_connections} on the webhook, {args.admin_connections} on the admin port, "
            f"from {args.addresses} addresses, for {args.seconds:.0f} s; {args.posts} POSTs from 127.0.0.1")
        for thread in (attack, prober, sampler):
            thread.start()
        # The legitimate POSTs from when the attack has ramped up until 6 s before it ends.
        poster_start = start + min(3.0, args.seconds / 4)
        poster_end = max(poster_start, start + args.seconds - 6.0)
        stopping = threading.Event()
        poster.run(poster_start, poster_end, stopping)
        poster.join()
        while time.monotonic() < start + args.seconds:
            time.sleep(0.1)
        account.stop()
        values = self.finish(attack, prober, sampler, admin_port)
        log("attack over; stopping the router (SIGTERM)")
        exit_status = self.stop_router()

        served = {token for token, (status, _, _) in poster.results.items() if status == 200}
        failures = Counter(
            (f"HTTP {status}" if status else error) for status, _, error in poster.results.values() if status != 200)
        in_sink = set()
        sink_lines = 0
        try:
            with open(os.path.join(self.tmp, "sink.jsonl")) as sink:
                for line in sink:
                    sink_lines += 1
                    try:
                        in_sink.add(json.loads(line).get("subject"))
                    except ValueError:
                        pass
        except FileNotFoundError:
            pass
        legit_in_sink = {token for token in in_sink if token and token.startswith(f"legit-{poster.run_id}-")}
        times = sorted(seconds for status, seconds, _ in poster.results.values() if status == 200)

        lines = [f"== slow-loris on the webhook and the admin port: {len(served)}/{args.posts} served =="]
        misses = []
        needed = -(-args.posts * 95 // 100)  # 95 %, rounded up
        ok = len(served) >= needed
        if not ok:
            misses.append("served")
        lines.append(
            f"served              {len(served)}/{args.posts} POST /push answered 200 at the first try"
            f"{' (others: ' + ', '.join(f'{what} ×{n}' for what, n in failures.most_common()) + ')' if failures else ''}"
            f"   [target: >= {needed}] {'met' if ok else 'MISSED'}")
        if times:
            lines.append(f"{'':20}answer time of the served: median {times[len(times) // 2] * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms")
        ok = served <= legit_in_sink
        if not ok:
            misses.append("reached sink")
        lines.append(
            f"reached sink        {len(served & legit_in_sink)}/{len(served)} served ({len(legit_in_sink)} of the {args.posts} in the file, {sink_lines} lines in all)"
            f"   [target: all served] {'met' if ok else 'MISSED'}")
        common, more = self.common_lines(prober, sampler, limit, exit_status, account, groups)
        lines += common
        misses += more
        lines.append("router counters")
        lines += self.counter_lines(values, [
            ("webhook_connections_evicted_total", "push.webhook_connections_evicted_total"),
            ("webhook_connections_refused_total", "push.webhook_connections_refused_total"),
            ("webhook_timeouts_total", "push.webhook_timeouts_total"),
            ("webhook_accepted_total", "push.webhook_accepted_total"),
            ("switchyard_admin_connections_evicted_total", "switchyard_admin_connections_evicted_total"),
            ("switchyard_admin_connections_refused_total", "switchyard_admin_connections_refused_total"),
            ("switchyard_admin_timeouts_total", "switchyard_admin_timeouts_total"),
        ])
        return lines, misses

    # -- SIP mode -------------------------------------------------------------------------

    def run_sip(self):
        args = self.args
        sipp = shutil.which(args.sipp) if os.sep not in args.sipp else args.sipp
        if not sipp or not os.access(sipp, os.X_OK):
            raise SystemExit(f"slowloris: SIPp ({args.sipp}) is not installed")
        scenario = os.path.join(REPO, "examples", "sip-pager", "message.xml")
        plugins = self.prepare(["core", "sip"])
        sip_port = free_port(udp_too=True)
        routes = os.path.join(self.tmp, "routes.yaml")
        with open(routes, "w") as route_file:
            route_file.write(
                "# Written by Benchmarks/attack/slowloris.py: a sip instance, no registration, default limits, to a file.\n"
                "instances:\n"
                "  pager:\n"
                "    plugin: sip\n"
                '    identity: { impu: "sip:alice@example.test" }\n'
                f"    listen: {{ host: 127.0.0.1, port: {sip_port} }}\n"
                f'  sink: {{ plugin: core, file: {{ path: "{os.path.join(self.tmp, "sink.jsonl")}" }} }}\n'
                "routes:\n"
                "  - { from: pager.messages, to: sink.write }\n")
        admin_port = self.start_router(routes, plugins, dict(os.environ))
        limit = soft_open_file_limit(self.router.pid)
        log(f"router {self.router.pid} ready: sip 127.0.0.1:{sip_port} (UDP and TCP), admin 127.0.0.1:{admin_port}, open-file limit {limit}")

        groups = [Group(
            "sip-tcp", sip_port, args.sip_connections,
            f"MESSAGE sip:alice@127.0.0.1:{sip_port} SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.2:5060;branch=z9hG4bK-slow\r\n".encode(),
            b"X-Slow: a\r\n")]
        attack = self.attack(groups)
        prober, sampler = self.monitor(admin_port, groups)
        command = [
            sipp, f"127.0.0.1:{sip_port}", "-sf", scenario, "-t", args.sipp_transport,
            "-i", "127.0.0.1", "-p", str(free_port(udp_too=True)), "-max_socket", "1000",
            "-m", str(args.messages), "-r", str(args.rate), "-l", str(max(10, args.rate * 5)),
            "-recv_timeout", "5000", "-timeout", f"{int(args.seconds) + 120}s", "-timeout_error",
            "-nostdin", "-trace_stat", "-stf", "sipp-stat.csv", "-fd", "1", "-trace_err", "-error_file", "sipp-errors.log",
        ]
        account = CPUAccount()
        account.start(self.router.pid)
        start = time.monotonic()
        log(f"attack: {args.sip_connections} on the sip TCP port from {args.addresses} addresses, for {args.seconds:.0f} s; "
            f"SIPp: {args.messages} MESSAGEs at {args.rate}/s over {args.sipp_transport}")
        for thread in (attack, prober, sampler):
            thread.start()
        time.sleep(min(3.0, args.seconds / 4))
        with open(os.path.join(self.tmp, "sipp.out"), "wb") as output:
            self.sipp = subprocess.Popen(command, cwd=self.tmp, stdin=subprocess.DEVNULL, stdout=output,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        # The attack lasts --seconds, and longer if SIPp is not done by then (SIPp's -timeout bounds it).
        while time.monotonic() < start + args.seconds or self.sipp.poll() is None:
            time.sleep(0.1)
        sipp_status = self.sipp.returncode
        account.stop()
        values = self.finish(attack, prober, sampler, admin_port)
        log("attack over; stopping the router (SIGTERM)")
        exit_status = self.stop_router()

        successful = failed = 0
        try:
            with open(os.path.join(self.tmp, "sipp-stat.csv")) as stat:
                rows = [line.rstrip("\n").split(";") for line in stat if line.strip()]
            header, last = rows[0], rows[-1]
            successful = int(last[header.index("SuccessfulCall(C)")])
            failed = int(last[header.index("FailedCall(C)")])
        except (OSError, IndexError, ValueError) as error:
            log(f"could not read SIPp's statistics: {error}")
        sipp_errors = Counter()
        try:
            with open(os.path.join(self.tmp, "sipp-errors.log"), errors="replace") as errors_file:
                for line in errors_file:
                    text = re.sub(r"\d+", "N", line.strip())
                    if text and text != "The following events occurred:":
                        sipp_errors[text[:100]] += 1
        except FileNotFoundError:
            pass
        sink_lines = 0
        try:
            with open(os.path.join(self.tmp, "sink.jsonl")) as sink:
                sink_lines = sum(1 for line in sink if '"sip:bob@peer.test"' in line)
        except FileNotFoundError:
            pass

        share = 100.0 * successful / max(1, args.messages)
        lines = [f"== slow-loris on SIP over TCP: {successful}/{args.messages} MESSAGEs answered 200 =="]
        misses = []
        ok = successful * 100 >= args.messages * 95
        if not ok:
            misses.append("answered")
        lines.append(
            f"answered 200        {successful}/{args.messages} ({share:.1f} %), failed {failed}; SIPp exit status {sipp_status}"
            f"   [target: >= 95 %] {'met' if ok else 'MISSED'}")
        for text, n in sipp_errors.most_common(4):
            lines.append(f"{'':20}SIPp: {n} × {text}")
        ok = sink_lines >= successful
        if not ok:
            misses.append("reached sink")
        lines.append(f"reached sink        {sink_lines} MESSAGEs in the file   [target: every answered one ({successful})] {'met' if ok else 'MISSED'}")
        common, more = self.common_lines(prober, sampler, limit, exit_status, account, groups)
        lines += common
        misses += more
        lines.append("router counters")
        lines += self.counter_lines(values, [
            (name, f"pager.{name}") for name in (
                "tcp_connections_evicted_total", "tcp_connections_refused_total", "message_timeouts_total",
                "connections_idle_closed_total", "tcp_accept_failures_total", "messages_received_total",
                "refused_full_total", "server_transactions_refused_total", "malformed_total")])
        return lines, misses


def main():
    parser = argparse.ArgumentParser(
        description="Slow-loris attack on a router's webhook and admin port, or (--sip) its SIP TCP port, "
                    "with legitimate load alongside (issue 33). See the top of this file.")
    parser.add_argument("--router", default=os.path.join(REPO, ".build", "debug", "switchyard"), help="the switchyard binary (default: the debug build)")
    parser.add_argument("--plugins", default=os.path.join(REPO, ".build", "debug"), help="folder with libcore.so, libpush.so, libsip.so (copied; default: the debug build)")
    parser.add_argument("--seconds", type=float, default=40.0, help="length of the attack (default 40)")
    parser.add_argument("--sip", action="store_true", help="attack a sip instance's TCP port instead, with SIPp as the legitimate load")
    parser.add_argument("--webhook-connections", type=int, default=600, help="slow connections on the webhook (default 600)")
    parser.add_argument("--admin-connections", type=int, default=300, help="slow connections on the admin port (default 300)")
    parser.add_argument("--sip-connections", type=int, default=300, help="slow connections on the SIP TCP port (default 300)")
    parser.add_argument("--addresses", type=int, default=40, help="source addresses 127.0.0.2 onwards (default 40, at most 250)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between two bytes on one slow connection (default 2)")
    parser.add_argument("--reopen-delay", type=float, default=0.5, help="seconds before a connection the router closed is opened again (default 0.5, ±20 %%)")
    parser.add_argument("--posts", type=int, default=100, help="legitimate POST /push requests (default 100)")
    parser.add_argument("--messages", type=int, default=200, help="SIPp MESSAGEs (default 200)")
    parser.add_argument("--rate", type=int, default=10, help="SIPp MESSAGEs per second (default 10)")
    parser.add_argument("--sipp", default="sipp", help="the SIPp binary (default: sipp on PATH)")
    parser.add_argument("--sipp-transport", default="tn", choices=["tn", "t1"], help="SIPp over TCP: tn, one connection per MESSAGE (default), or t1, one for all")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--log", metavar="FILE", help="copy the router's log to FILE at the end")
    args = parser.parse_args()
    if not 1 <= args.addresses <= 250:
        parser.error("--addresses must be 1…250")
    args.router = os.path.abspath(args.router)
    args.plugins = os.path.abspath(args.plugins)
    if not os.access(args.router, os.X_OK):
        parser.error(f"{args.router} is not an executable")
    wanted = args.webhook_connections + args.admin_connections + args.sip_connections + args.posts + 200
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != -1 and soft < wanted:
        parser.error(f"this process may open {soft} files, the attack needs about {wanted}: raise `ulimit -n`")

    def terminate(signum, frame):
        raise Stop()

    signal.signal(signal.SIGTERM, terminate)
    run = Run(args)
    try:
        lines, misses = run.run_sip() if args.sip else run.run_http()
    except (KeyboardInterrupt, Stop):
        log("interrupted; cleaning up")
        return 130
    except SystemExit as error:
        if isinstance(error.code, str):
            print(error.code, file=sys.stderr)
            return 2
        raise
    finally:
        run.cleanup()
    build = "?"
    try:
        build = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    lines.insert(1, f"run                 {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, router {os.path.relpath(args.router, REPO)} "
                    f"(built {time.strftime('%H:%M', time.localtime(os.path.getmtime(args.router)))}), HEAD {build}, {os.cpu_count()} cores")
    lines.append(f"result              {'PASS' if not misses else 'FAIL: ' + ', '.join(misses)}")
    print("\n".join(lines), flush=True)
    return 0 if not misses else 1


if __name__ == "__main__":
    sys.exit(main())
