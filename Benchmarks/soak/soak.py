#!/usr/bin/env python3
"""Soak run: MQTT -> at-least-once route -> FCM (a local emulator) and a JSON-lines file, while
the broker is restarted and the router is killed with SIGKILL on a fixed schedule.

Started by run.sh (which builds the router and prepares TMP/plugins); usable on its own with
--release-dir and --tmp. Every process it starts runs under `setpriv --pdeathsig KILL`, so
none outlives this script, and the `finally` of main() stops them on any exit.

Timeline (t = 0 when the publisher starts; INTERVAL = 30 s by default):
  fault phase  0 .. DURATION   the router is killed (SIGKILL) at INTERVAL, 2*INTERVAL, ... and
                               restarted at once on the same spool; the broker is stopped
                               (SIGTERM, so it saves its persistent store) and started again at
                               INTERVAL/2, 3*INTERVAL/2, ...
  calm phase   .. + CALM       no faults, the same load: RSS after warm-up and at the end
  drain        publishing stops; the publisher waits for its last PUBACKs, then the script waits
               (at most SETTLE s) until both sinks hold every acknowledged message.

Prints one JSON line (the figures) on stdout, a human summary on stderr; exit status 1 when a
message the broker acknowledged is missing at a sink or was dead-lettered, 2 on a setup failure.
"""

import argparse
import bisect
import collections
import getpass
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "mqtt-bridge"))
from load import RawConnection, utf8, varint  # noqa: E402  (the raw MQTT 3.1.1 client of the bridge benchmark)

FCM_ENDPOINT = REPO / "Tests/IntegrationTests/Support/fcm_endpoint.py"
PROJECT = "switchyard-soak"
CLIENT_EMAIL = "router@switchyard-soak.iam.gserviceaccount.com"
AUDIENCE = "https://oauth2.googleapis.com/token"
# Runs the emulator with TCP_NODELAY on its connections. http.server writes an answer's head and
# body in two sends; with Nagle's algorithm the body waits for the client's delayed ACK (about
# 40 ms), which caps each keep-alive connection at ~25 answers/s — the emulator, not the router,
# would be the limit (≈ 180 msg/s here).
FCM_LAUNCHER = """
import runpy, socketserver, sys
socketserver.StreamRequestHandler.disable_nagle_algorithm = True
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
TOPIC = "soak/m"
DEVICE_TOKEN = "soak-device-token"


def log(message):
    print(f"[soak] {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def spawn(command, log_path):
    """Starts COMMAND with its output in LOG_PATH; it gets SIGKILL if this script dies."""
    out = open(log_path, "ab")
    try:
        return subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--"] + command, stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL)
    finally:
        out.close()


def stop(process, grace=5.0):
    """SIGTERM, then SIGKILL after GRACE seconds; None or an exited process is fine."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def cpu_seconds(pid):
    """User + system CPU seconds a live process has used (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


# ---------------------------------------------------------------------------------------------
# The publisher: QoS 1 at a steady rate, through broker restarts
# ---------------------------------------------------------------------------------------------

class Publisher(threading.Thread):
    """Publishes `{"seq": N, "t": unix_ms}` to soak/m at RATE msg/s with at most WINDOW unacknowledged.

    Message N is due at N / RATE seconds after start; what comes due while the broker is away
    is sent when it is back (a device buffering). When the connection drops, every message not
    yet PUBACKed is sent again on the next connection (clean session: a new message for the
    broker), so a broker restart may turn one message into two copies, never into none.
    "Sent" is what the broker PUBACKed.
    """

    def __init__(self, port, rate, window):
        super().__init__(name="publisher", daemon=True)
        self.port, self.rate, self.window = port, rate, window
        # Written by this thread only; the main thread reads them after join() or as rough progress.
        self.first_send = []  # seq -> monotonic time of the first send
        self.acked_at = []  # seq -> monotonic time of the PUBACK, or None
        self.sends = []  # seq -> how many times it was published
        self.connects = 0
        self.connection_losses = 0
        self.acked = 0
        self.start_time = None
        self.generating = threading.Event()
        self.generating.set()
        self.stopping = threading.Event()
        self.error = None
        self._unacked = {}  # packet id -> seq, on the current connection
        self._resend = collections.deque()
        self._next_pid = 0

    def run(self):
        try:
            self._run()
        except Exception as error:  # reported by the main thread
            self.error = repr(error)

    def _run(self):
        self.start_time = time.monotonic()
        conn = None
        while not self.stopping.is_set():
            if conn is None:
                try:
                    conn = RawConnection("127.0.0.1", self.port, "soak-publisher", timeout=5)
                except (OSError, SystemExit):  # the broker is restarting
                    time.sleep(0.05)
                    continue
                self.connects += 1
                self._resend.extend(sorted(self._unacked.values()))
                self._unacked.clear()
                buffer = bytearray()
            try:
                self._send_due(conn)
                self._read_acks(conn, buffer)
            except (OSError, SystemExit):
                self.connection_losses += 1
                conn.sock.close()
                conn = None
        if conn is not None:
            conn.close()

    def outstanding(self):
        return len(self._unacked) + len(self._resend)

    def _packet_id(self):
        while True:
            self._next_pid = self._next_pid % 65535 + 1
            if self._next_pid not in self._unacked:
                return self._next_pid

    def _send_due(self, conn):
        room = self.window - len(self._unacked)
        batch = []
        now = time.monotonic()
        while room > 0 and self._resend:
            seq = self._resend.popleft()
            batch.append(self._publish(seq, now))
            room -= 1
        if self.generating.is_set():
            due = int((now - self.start_time) * self.rate) + 1
            while room > 0 and len(self.first_send) < due:
                seq = len(self.first_send)
                self.first_send.append(now)
                self.acked_at.append(None)
                self.sends.append(0)
                batch.append(self._publish(seq, now))
                room -= 1
        if batch:
            conn.sock.sendall(b"".join(batch))

    def _publish(self, seq, now):
        pid = self._packet_id()
        self._unacked[pid] = seq
        self.sends[seq] += 1
        payload = json.dumps({"seq": seq, "t": int(time.time() * 1000)}, separators=(",", ":")).encode()
        variable = utf8(TOPIC) + pid.to_bytes(2, "big")
        return b"\x32" + varint(len(variable) + len(payload)) + variable + payload

    def _read_acks(self, conn, buffer):
        readable, _, _ = select.select([conn.sock], [], [], 0.005)
        if not readable:
            return
        data = conn.sock.recv(65536)
        if not data:
            raise OSError("the broker closed the connection")
        buffer += data
        pos = 0
        now = time.monotonic()
        while True:
            parsed = RawConnection.split(buffer, pos)
            if parsed is None:
                break
            first, start, end = parsed
            if first >> 4 == 4 and end - start >= 2:  # PUBACK
                seq = self._unacked.pop(int.from_bytes(buffer[start:start + 2], "big"), None)
                if seq is not None and self.acked_at[seq] is None:
                    self.acked_at[seq] = now
                    self.acked += 1
            pos = end
        del buffer[:pos]


# ---------------------------------------------------------------------------------------------
# Peers: broker, FCM emulator, router
# ---------------------------------------------------------------------------------------------

class Soak:
    def __init__(self, args):
        self.args = args
        self.tmp = Path(args.tmp)
        self.release_dir = Path(args.release_dir)
        self.broker = None
        self.router = None
        self.fcm = None
        self.publisher = None
        self.events = []  # (monotonic time, kind, detail)
        self.lifetimes = []  # {"index", "pid", "start", "end", "connected", "log"}
        self.rss = []  # (monotonic time, lifetime index, age s, VmRSS KiB)
        self.cpu = collections.Counter()  # role -> CPU seconds of its processes, read before each stop
        self.broker_port = free_port()
        self.admin_port = free_port()
        self.spool = self.tmp / "spool" / "spool.db"
        self.out = self.tmp / "out.jsonl"

    # --- setup -------------------------------------------------------------------------------

    def start_fcm(self):
        key, public = self.tmp / "sa-key.pem", self.tmp / "sa-public.pem"
        for command in (["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(key)],
                        ["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(public)]):
            subprocess.run(command, check=True, capture_output=True)
        port_file = self.tmp / "fcm.port"
        self.fcm = spawn([sys.executable, "-c", FCM_LAUNCHER, str(FCM_ENDPOINT), str(port_file), str(public), CLIENT_EMAIL,
                          AUDIENCE, PROJECT], self.tmp / "fcm.log")
        deadline = time.monotonic() + 20
        while not port_file.exists():
            if time.monotonic() > deadline or self.fcm.poll() is not None:
                raise SetupError("the FCM emulator did not start (see fcm.log)")
            time.sleep(0.05)
        self.fcm_url = "http://127.0.0.1:%s" % port_file.read_text().split()[0]
        account = {"type": "service_account", "project_id": PROJECT, "private_key_id": "soak-key-1",
                   "private_key": key.read_text(), "client_email": CLIENT_EMAIL, "token_uri": self.fcm_url + "/token"}
        self.service_account = self.tmp / "service-account.json"
        self.service_account.write_text(json.dumps(account))
        os.chmod(self.service_account, 0o600)

    def start_broker(self):
        data = self.tmp / "broker-data"
        data.mkdir(exist_ok=True)
        conf = self.tmp / "broker.conf"
        conf.write_text(f"""listener {self.broker_port} 127.0.0.1
allow_anonymous true
persistence true
persistence_location {data}/
# Run as root, mosquitto would switch to the user "mosquitto", which cannot write its store here
# ("Error: Permission denied" at exit, and the router's session is gone after the restart).
user {getpass.getuser()}
# Nothing the broker holds for the router's session is dropped while the router is away.
max_queued_messages 0
max_queued_bytes 0
max_inflight_messages 0
log_dest stderr
log_type error
log_type warning
log_type notice
""")
        self.broker = spawn(["mosquitto", "-c", str(conf)], self.tmp / "broker.log")
        deadline = time.monotonic() + 10
        while not port_open(self.broker_port):
            if time.monotonic() > deadline or self.broker.poll() is not None:
                raise SetupError("mosquitto did not start (see broker.log)")
            time.sleep(0.02)

    @property
    def session_override(self):
        # SESSION=clean: the defaults before issue 36, as the baseline of the same run.
        return "\n    clean_start: true" if self.args.session == "clean" else ""

    def write_routes(self):
        routes = self.tmp / "routes" / "soak.yaml"
        routes.write_text(f"""spool: {{ path: "{self.spool}" }}
instances:
  broker:
    plugin: mqtt
    url: "mqtt://127.0.0.1:{self.broker_port}"
    version: 5
    # No session settings: with a QoS 1 subscription the defaults keep the session
    # (switchyard-broker, clean_start false, session_expiry 3600) while the router is down.{self.session_override}
    reconnect: {{ initial_delay: 100ms, max_delay: 1s }}
    subscriptions:
      - {{ topic: "soak/#", qos: 1 }}
  fcm:
    plugin: push
    fcm:
      service_account: "{self.service_account}"
      base_url: "{self.fcm_url}"
  out:
    plugin: core
    file: {{ path: "{self.out}", format: envelope }}
routes:
  - name: soak
    from: broker.messages
    map:
      token: "{DEVICE_TOKEN}"
      data: {{ seq: "{{{{body.seq}}}}", id: "{{{{id}}}}", dup: "{{{{headers.mqtt.dup}}}}" }}
    to: [fcm.send, out.write]
    delivery: at-least-once
    dedupe: {{ key: "{{{{body.seq}}}}", window: {self.args.dedupe} }}   # the publisher's sequence number
""")
        self.routes = routes
        check = subprocess.run([str(self.release_dir / "switchyard"), "validate", str(routes), "--plugins",
                                str(self.tmp / "plugins")], capture_output=True, text=True)
        if check.returncode != 0:
            raise SetupError("validate refused the routes:\n" + check.stdout + check.stderr)

    def start_router(self):
        index = len(self.lifetimes)
        router_log = self.tmp / "router-logs" / f"router-{index:03d}.log"
        router_log.parent.mkdir(exist_ok=True)
        self.router = spawn([str(self.release_dir / "switchyard"), "run", str(self.routes), "--plugins",
                             str(self.tmp / "plugins"), "--admin", f"127.0.0.1:{self.admin_port}"], router_log)
        now = time.monotonic()
        self.lifetimes.append({"index": index, "pid": self.router.pid, "start": now, "end": None, "connected": None,
                               "log": router_log})
        self.events.append((now, "router_start", index))

    def check_connected(self):
        """Notes when the current router lifetime logged its broker connection (0.1 s resolution)."""
        life = self.lifetimes[-1]
        if life["connected"] is None:
            try:
                text = life["log"].read_text(errors="replace")
            except OSError:
                return
            if f"connected to 127.0.0.1:{self.broker_port}" in text:
                life["connected"] = time.monotonic()

    # --- faults ------------------------------------------------------------------------------

    def kill_router(self):
        self.cpu["router"] += cpu_seconds(self.router.pid)
        self.router.send_signal(signal.SIGKILL)
        self.router.wait(10)
        now = time.monotonic()
        self.lifetimes[-1]["end"] = now
        self.events.append((now, "router_kill", self.lifetimes[-1]["index"]))
        self.start_router()

    def restart_broker(self):
        started = time.monotonic()
        self.events.append((started, "broker_stop", None))
        self.cpu["broker"] += cpu_seconds(self.broker.pid)
        stop(self.broker, 10)
        self.start_broker()
        self.events.append((time.monotonic(), "broker_up", None))

    def sample_rss(self):
        life = self.lifetimes[-1]
        value = rss_kib(life["pid"])
        if value is not None:
            now = time.monotonic()
            self.rss.append((now, life["index"], now - life["start"], value))

    # --- the run -----------------------------------------------------------------------------

    def run_phase(self, until, faults, t0):
        """Ticks every 0.1 s until UNTIL: faults on schedule, RSS every second."""
        interval = self.args.interval
        next_rss = time.monotonic()
        while True:
            now = time.monotonic()
            if self.router.poll() is not None:
                raise SetupError(f"the router exited by itself (status {self.router.returncode}); see "
                                 f"{self.lifetimes[-1]['log']}")
            if self.publisher.error:
                raise SetupError("the publisher failed: " + self.publisher.error)
            if faults:
                if now >= t0 + self.kills_done * interval + interval and self.kills_done < self.kills_planned:
                    self.kills_done += 1
                    self.kill_router()
                    continue
                if (now >= t0 + self.broker_restarts_done * interval + interval / 2
                        and self.broker_restarts_done < self.restarts_planned):
                    self.broker_restarts_done += 1
                    self.restart_broker()
                    continue
            if now >= until:
                return
            self.check_connected()
            if now >= next_rss:
                self.sample_rss()
                next_rss += 1.0
            time.sleep(0.1)

    def run(self):
        args = self.args
        self.start_fcm()
        self.start_broker()
        self.write_routes()
        self.start_router()
        deadline = time.monotonic() + 60
        while self.lifetimes[-1]["connected"] is None:
            if time.monotonic() > deadline or self.router.poll() is not None:
                raise SetupError(f"the router did not connect to the broker (see {self.lifetimes[-1]['log']})")
            time.sleep(0.1)
            self.check_connected()
        log(f"broker 127.0.0.1:{self.broker_port}, FCM emulator {self.fcm_url}, admin 127.0.0.1:{self.admin_port}, "
            f"tmp {self.tmp}")

        self.publisher = Publisher(self.broker_port, args.rate, args.window)
        self.publisher.start()
        while self.publisher.start_time is None:
            time.sleep(0.01)
        t0 = self.t0 = self.publisher.start_time
        # The last kill falls on DURATION itself, so the calm phase is one whole router lifetime.
        self.kills_planned = int(args.duration // args.interval)
        self.restarts_planned = int((args.duration - args.interval / 2) // args.interval) + 1
        self.kills_done = self.broker_restarts_done = 0
        log(f"fault phase: {args.duration:g} s, {args.rate:g} msg/s, {self.kills_planned} router kills and "
            f"{self.restarts_planned} broker restarts planned")
        self.run_phase(t0 + args.duration, True, t0)
        # Make sure the fault phase ends with the last kill even when a tick was late.
        while self.kills_done < self.kills_planned:
            self.kills_done += 1
            self.kill_router()
        self.calm_start = self.lifetimes[-1]["start"]
        log(f"calm phase: {args.calm:g} s without faults (router lifetime {self.lifetimes[-1]['index']})")
        self.run_phase(self.calm_start + args.calm, False, t0)
        self.calm_end = time.monotonic()

        # Drain: stop generating, wait for the last PUBACKs (bounded), then for both sinks.
        self.publisher.generating.clear()
        self.publish_end = time.monotonic()
        deadline = time.monotonic() + 30
        while self.publisher.outstanding() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.publisher.stopping.set()
        self.publisher.join(10)
        sent = {seq for seq, at in enumerate(self.publisher.acked_at) if at is not None}
        log(f"published {len(self.publisher.first_send)}, acknowledged by the broker {len(sent)}; waiting up to "
            f"{args.settle:g} s for the sinks")
        deadline = time.monotonic() + args.settle
        file_seen = set()
        file_reader = JSONLinesReader(self.out)
        while True:
            for line in file_reader.new_lines():
                seq = file_seq(line)
                if seq is not None:
                    file_seen.add(seq)
            # The emulator's log holds every request: fetched only once the file is complete.
            if sent <= file_seen and sent <= set(fcm_copies(self.fetch_fcm_log())):
                break
            if time.monotonic() > deadline:
                log("the sinks did not settle in time")
                break
            time.sleep(2 if sent <= file_seen else 0.5)
        self.settle_time = time.monotonic() - self.publish_end
        self.final_metrics = self.fetch_metrics()
        for role, process in (("router", self.router), ("broker", self.broker), ("fcm_emulator", self.fcm)):
            self.cpu[role] += cpu_seconds(process.pid)
        self.cpu["publisher_and_script"] = time.process_time()
        stop(self.router, 30)
        self.lifetimes[-1]["end"] = time.monotonic()
        dead = subprocess.run([str(self.release_dir / "switchyard"), "dlq", "list", "--json", "--spool", str(self.spool)],
                              capture_output=True, text=True)
        self.dead_letters = dead.stdout if dead.returncode == 0 else "dlq list failed: " + dead.stderr
        return sent

    def fetch_fcm_log(self):
        with urllib.request.urlopen(self.fcm_url + "/control/log", timeout=60) as answer:
            return json.load(answer)

    def fetch_metrics(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.admin_port}/metrics", timeout=10) as answer:
                text = answer.read().decode()
        except OSError as error:
            return {"error": str(error)}
        kept = {}
        for line in text.splitlines():
            route = line.startswith("switchyard_route_") and 'route="soak"' in line
            if route or line.startswith("switchyard_plugin_metric"):
                name, _, value = line.rpartition(" ")
                kept[name] = value
        return kept

    def cleanup(self):
        if self.publisher is not None:
            self.publisher.stopping.set()
        for process in (self.router, self.broker, self.fcm):
            stop(process, 5)


class SetupError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Reading the sinks
# ---------------------------------------------------------------------------------------------

class JSONLinesReader:
    """Reads the lines appended to a file since the last call (a torn last line waits)."""

    def __init__(self, path):
        self.path, self.offset, self.torn = path, 0, 0

    def new_lines(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        lines = []
        for raw in data[:end].splitlines():
            try:
                lines.append(json.loads(raw))
            except ValueError:  # a line cut by a SIGKILL in the middle of a write
                self.torn += 1
        return lines


def file_seq(envelope):
    try:
        return int(envelope["body"]["data"]["seq"])
    except (KeyError, TypeError, ValueError):
        return None


def fcm_copies(entries):
    """seq -> [(arrival unix time, envelope id, dup header)] of the sends FCM answered 200."""
    copies = collections.defaultdict(list)
    for entry in entries:
        if entry.get("kind") != "send" or entry.get("verdict") != "ok":
            continue
        data = (entry.get("body") or {}).get("message", {}).get("data", {})
        try:
            copies[int(data["seq"])].append((entry["at"], data.get("id"), data.get("dup")))
        except (KeyError, TypeError, ValueError):
            pass
    return copies


def rfc3339_to_unix(text):
    from datetime import datetime
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------

def parse_duration(text):
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for unit in ("ms", "s", "m", "h"):
        if text.endswith(unit) and text[:-len(unit)].isdigit():
            return int(text[:-len(unit)]) * units[unit]
    raise ValueError(f"not a duration: {text}")


def sink_figures(copies, sent, sends, window_s, fault_events=()):
    """copies: seq -> [(time unix s, envelope id, dup)]; the loss/duplicate figures of one sink.
    fault_events: [(unix time, kind)] in order, to tell which fault each new-id copy followed."""
    fault_times = [event[0] for event in fault_events]
    after = collections.Counter()
    unique = set(copies)
    missing = sorted(sent - unique)
    duplicates = same_id = publisher_resent = broker_redelivered = beyond_window = 0
    max_gap = 0.0
    for seq, items in copies.items():
        if len(items) < 2:
            continue
        extra = len(items) - 1
        duplicates += extra
        ids = [item[1] for item in items]
        distinct = len(set(ids))
        same_id += len(items) - distinct
        others = distinct - 1  # copies that reached the router as a new MQTT message (a new envelope id)
        if seq < len(sends) and sends[seq] > 1:
            publisher_resent += others
        else:
            broker_redelivered += others
            # The fault before the later copies (by the time the router took them / FCM got them).
            seen_ids = set()
            for at, envelope_id, _ in sorted(items, key=lambda item: item[0] or 0):
                if envelope_id in seen_ids:
                    continue
                if seen_ids and at is not None:
                    i = bisect.bisect_right(fault_times, at) - 1
                    after[fault_events[i][1] if i >= 0 else "none"] += 1
                seen_ids.add(envelope_id)
        times = sorted(item[0] for item in items if item[0] is not None)
        if len(times) >= 2:
            gap = times[-1] - times[0]
            max_gap = max(max_gap, gap)
            beyond_window += sum(1 for t in times[1:] if t - times[0] > window_s)
    return {
        "unique_delivered": len(unique & sent),
        "missing": len(missing),
        "missing_seqs": missing[:50],
        "delivered_not_acknowledged_to_publisher": len(unique - sent),
        "deliveries": sum(len(items) for items in copies.values()),
        "duplicates": duplicates,
        "duplicates_same_envelope_id": same_id,
        "duplicates_publisher_resent": publisher_resent,
        "duplicates_broker_redelivered": broker_redelivered,
        "duplicates_beyond_dedupe_window": beyond_window,
        "max_duplicate_gap_s": round(max_gap, 3),
        "broker_redelivered_after": dict(after),
    }


def rss_figures(soak):
    args = soak.args
    by_life = collections.defaultdict(list)
    for _, index, age, value in soak.rss:
        by_life[index].append((age, value))

    def at_age(index, age):
        samples = by_life.get(index) or []
        if not samples:
            return None
        return min(samples, key=lambda sample: abs(sample[0] - age))[1]

    calm_index = soak.lifetimes[-1]["index"]
    fault_lives = [life["index"] for life in soak.lifetimes if life["index"] != calm_index]
    same_age = [at_age(index, args.rss_age) for index in fault_lives]
    same_age = [value for value in same_age if value is not None]
    calm = by_life.get(calm_index) or []
    warm = at_age(calm_index, args.warm)
    end = calm[-1][1] if calm else None
    return {
        "same_age_s": args.rss_age,
        "first_lifetime_kib": same_age[0] if same_age else None,
        "last_lifetime_kib": same_age[-1] if same_age else None,
        "min_lifetime_kib": min(same_age) if same_age else None,
        "max_lifetime_kib": max(same_age) if same_age else None,
        "calm_after_warmup_kib": warm,
        "calm_warmup_s": args.warm,
        "calm_end_kib": end,
        "calm_end_age_s": round(calm[-1][0], 1) if calm else None,
        "calm_change_percent": round((end - warm) * 100 / warm, 2) if warm and end else None,
        "lifetimes_change_percent": (round((same_age[-1] - same_age[0]) * 100 / same_age[0], 2)
                                     if len(same_age) >= 2 else None),
    }


def nearest_events(soak, when):
    """The fault events closest before and after a monotonic time, as 'kind@t' relative to t0."""
    times = [event[0] for event in soak.events]
    i = bisect.bisect_left(times, when)
    around = soak.events[max(0, i - 2):i + 2]
    return [f"{kind}@{at - soak.t0:.2f}" for at, kind, _ in around]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--release-dir", required=True, help="folder with the switchyard executable")
    parser.add_argument("--tmp", required=True, help="work folder with plugins/ and routes/")
    parser.add_argument("--duration", type=float, default=600, help="fault phase, seconds (default 600)")
    parser.add_argument("--interval", type=float, default=30, help="seconds between router kills (default 30)")
    parser.add_argument("--calm", type=float, default=120, help="final phase without faults, seconds (default 120)")
    parser.add_argument("--warm", type=float, default=30, help="calm-phase age of the warm-up RSS sample (default 30)")
    parser.add_argument("--rss-age", type=float, default=25,
                        help="router age at which RSS is compared across lifetimes (default 25)")
    parser.add_argument("--rate", type=float, default=250, help="messages per second (default 250)")
    parser.add_argument("--window", type=int, default=500, help="publishes awaiting PUBACK at most (default 500)")
    parser.add_argument("--settle", type=float, default=60, help="longest wait for the sinks after publishing (default 60)")
    parser.add_argument("--dedupe", default="10m", help="the route's dedupe window (default 10m)")
    parser.add_argument("--session", default="default", choices=["default", "clean"], help="clean: clean_start: true on the mqtt instance (the old default, as a baseline)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(130))

    soak = Soak(args)
    try:
        sent = soak.run()
        figures = report(soak, sent)
    except SetupError as error:
        log(f"error: {error}")
        return 2
    finally:
        soak.cleanup()
    lost = figures["file"]["missing"] + figures["fcm"]["missing"] + figures["dead_letters"]
    return 1 if lost or figures["sent"] == 0 else 0


def report(soak, sent):
    args = soak.args
    publisher = soak.publisher
    window_s = parse_duration(args.dedupe)
    file_reader = JSONLinesReader(soak.out)
    file_copies = collections.defaultdict(list)
    for envelope in file_reader.new_lines():
        seq = file_seq(envelope)
        if seq is not None:
            file_copies[seq].append((rfc3339_to_unix(envelope.get("time", "")), envelope.get("id"),
                                     envelope.get("headers", {}).get("mqtt.dup")))
    fcm_log = soak.fetch_fcm_log()
    fcm = fcm_copies(fcm_log)
    try:
        dead = json.loads(soak.dead_letters) if soak.dead_letters.strip().startswith("[") else None
    except ValueError:
        dead = None
    dead_count = len(dead) if isinstance(dead, list) else len(soak.dead_letters.strip().splitlines())
    connected = [life["connected"] - life["start"] for life in soak.lifetimes if life["connected"]]
    wall = time.time() - time.monotonic()
    faults = [(at + wall, kind) for at, kind, _ in soak.events if kind in ("router_kill", "broker_stop")]
    figures = {
        "benchmark": "soak",
        "duration_s": args.duration, "calm_s": args.calm, "interval_s": args.interval, "rate": args.rate,
        "dedupe": args.dedupe,
        "published": len(publisher.first_send),
        "sent": len(sent),
        "publisher_resent_messages": sum(1 for n in publisher.sends if n > 1),
        "publisher_connections": publisher.connects,
        "router_kills": soak.kills_done,
        "broker_restarts": soak.broker_restarts_done,
        "router_lifetimes": len(soak.lifetimes),
        "router_connect_s_mean": round(sum(connected) / len(connected), 3) if connected else None,
        "router_connect_s_max": round(max(connected), 3) if connected else None,
        "file": sink_figures(file_copies, sent, publisher.sends, window_s, faults),
        "fcm": sink_figures(fcm, sent, publisher.sends, window_s, faults),
        "file_torn_lines": file_reader.torn,
        "fcm_refused_sends": sum(1 for e in fcm_log if e.get("kind") == "send" and e.get("verdict") != "ok"),
        "fcm_token_requests": sum(1 for e in fcm_log if e.get("kind") == "token"),
        "dead_letters": dead_count,
        "settle_s": round(soak.settle_time, 1),
        "cpu_s": {role: round(value, 1) for role, value in soak.cpu.items()},
        "load_average_at_end": os.getloadavg()[0],
        "rss": rss_figures(soak),
        "final_lifetime_metrics": soak.final_metrics,
    }
    # Where the missing ones were in the timeline.
    for sink in ("file", "fcm"):
        details = []
        for seq in figures[sink]["missing_seqs"][:20]:
            sent_at = publisher.first_send[seq]
            acked = publisher.acked_at[seq]
            details.append({"seq": seq, "first_send_s": round(sent_at - soak.t0, 3),
                            "ack_s": round(acked - soak.t0, 3) if acked else None, "sends": publisher.sends[seq],
                            "events_around_ack": nearest_events(soak, acked or sent_at)})
        figures[sink]["missing_detail"] = details
    print(json.dumps(figures), flush=True)
    (soak.tmp / "result.json").write_text(json.dumps(figures, indent=2))

    rss = figures["rss"]
    lines = [
        f"soak: {args.duration:g} s of faults + {args.calm:g} s calm at {args.rate:g} msg/s; "
        f"{figures['router_kills']} router kills (SIGKILL), {figures['broker_restarts']} broker restarts",
        f"published {figures['published']}, sent (PUBACKed) {figures['sent']}; publisher resent "
        f"{figures['publisher_resent_messages']} after broker restarts",
    ]
    for sink, name in (("file", "file sink"), ("fcm", "FCM emulator")):
        s = figures[sink]
        lines.append(f"{name:>13}: unique {s['unique_delivered']}, missing {s['missing']}, duplicates {s['duplicates']} "
                     f"(same envelope id {s['duplicates_same_envelope_id']}, publisher resent "
                     f"{s['duplicates_publisher_resent']}, broker redelivered {s['duplicates_broker_redelivered']}; "
                     f"beyond the {args.dedupe} window {s['duplicates_beyond_dedupe_window']})")
    lines.append(f"dead letters {figures['dead_letters']}; settled {figures['settle_s']} s after publishing stopped; "
                 f"CPU s {figures['cpu_s']}; load average {figures['load_average_at_end']:.2f}")
    lines.append(f"router RSS at age {rss['same_age_s']:g} s: first lifetime {rss['first_lifetime_kib']} KiB, last "
                 f"{rss['last_lifetime_kib']} KiB (range {rss['min_lifetime_kib']}..{rss['max_lifetime_kib']}); calm "
                 f"phase after {rss['calm_warmup_s']:g} s {rss['calm_after_warmup_kib']} KiB, at its end "
                 f"{rss['calm_end_kib']} KiB ({rss['calm_change_percent']} %)")
    lost = figures["file"]["missing"] + figures["fcm"]["missing"] + figures["dead_letters"]
    rss_ok = rss["calm_change_percent"] is not None and abs(rss["calm_change_percent"]) <= 10
    lines.append(f"sent = delivered after dedupe: {'yes' if not lost else 'NO'}; RSS within 10 %: "
                 f"{'yes' if rss_ok else 'NO'}")
    for line in lines:
        print(line, file=sys.stderr)
    return figures


if __name__ == "__main__":
    sys.exit(main())
