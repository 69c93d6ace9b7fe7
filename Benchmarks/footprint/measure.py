#!/usr/bin/env python3
"""Starts a router, times it to ready, lets it settle, and reads what it holds.

Usage: measure.py RUNS SETTLE_SECONDS ADMIN_PORT -- ROUTER_COMMAND...

Each run starts ROUTER_COMMAND, polls http://127.0.0.1:ADMIN_PORT/readyz every 2 ms until it
answers 200 "ready" (start-to-ready: from just before exec to that answer), waits SETTLE_SECONDS,
then reads /proc/PID/status (VmRSS, RssAnon, RssFile, Threads) and the name of every thread
(/proc/PID/task/*/comm), and stops the router with SIGTERM; then starts it once more with the
files cached and times that start to ready too. Prints one JSON object per run.

Before each start the files named in EVICT (colon-separated: the router, its libraries, the
plugins) are dropped from the page cache (POSIX_FADV_DONTNEED), so every run and every variant
starts from the same cold cache. Resident file pages depend on it: the kernel maps the cached
neighbours of each page a process touches (fault-around), so a file just written by the
installer (all of it cached) shows up to twice the RSS of the same file read from disk.

SMAPS_DIR=DIR keeps /proc/PID/smaps of each settled router as DIR/smaps.RUN.
"""

import collections
import http.client
import json
import os
import signal
import subprocess
import sys
import time


def ready(port: int) -> bool:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
        connection.request("GET", "/readyz")
        response = connection.getresponse()
        body = response.read()
        connection.close()
        return response.status == 200 and body.strip() == b"ready"
    except OSError:
        return False


def status(pid: int) -> dict[str, int]:
    fields = {}
    with open(f"/proc/{pid}/status") as file:
        for line in file:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "Threads"):
                fields[key] = int(value.split()[0])
    return fields


def thread_names(pid: int) -> dict[str, int]:
    names: collections.Counter[str] = collections.Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as file:
                names[file.read().strip()] += 1
        except OSError:
            pass
    return dict(names.most_common())


def rss_by_file(pid: int, top: int = 15) -> list[tuple[str, int]]:
    """Resident kB per mapped file (anonymous mappings as [anon], [heap], [stack])."""
    sizes: collections.Counter[str] = collections.Counter()
    name = "[anon]"
    with open(f"/proc/{pid}/smaps") as file:
        for line in file:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
                name = fields[5] if len(fields) > 5 else "[anon]"
            elif fields[0] == "Rss:":
                sizes[os.path.basename(name)] += int(fields[1])
    return sizes.most_common(top)


def evict(paths: list[str]) -> None:
    for path in paths:
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(descriptor)


def main() -> None:
    runs, settle, port = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    command = sys.argv[sys.argv.index("--") + 1 :]
    log = open(os.environ.get("ROUTER_LOG", os.devnull), "ab")
    cold = [path for path in os.environ.get("EVICT", "").split(":") if path]
    traffic = os.environ.get("TRAFFIC", "")

    def start() -> tuple[subprocess.Popen[bytes], float]:
        started = time.monotonic()
        router = subprocess.Popen(command, stdout=log, stderr=log)
        deadline = started + 30
        while not ready(port):
            if router.poll() is not None or time.monotonic() > deadline:
                router.kill()
                sys.exit(f"the router exited or was not ready in 30 s (log: {log.name})")
            time.sleep(0.002)
        return router, (time.monotonic() - started) * 1000

    def stop(router: subprocess.Popen[bytes]) -> None:
        router.send_signal(signal.SIGTERM)
        try:
            router.wait(timeout=20)
        except subprocess.TimeoutExpired:
            router.kill()
            router.wait()

    for run in range(runs):
        # From a cold cache: start to ready, then what it holds once settled.
        evict(cold)
        router, cold_ms = start()
        time.sleep(settle)
        result = {"run": run + 1, "ready_cold_ms": round(cold_ms, 1), **status(router.pid)}
        result["threads"] = thread_names(router.pid)
        result["rss_by_file_kB"] = rss_by_file(router.pid)
        if os.environ.get("SMAPS_DIR"):
            # The whole map of the settled router, for reading which part of a file is resident.
            with open(f"/proc/{router.pid}/smaps") as source, open(f"{os.environ['SMAPS_DIR']}/smaps.{run + 1}", "w") as copy:
                copy.write(source.read())
        if traffic:
            # Idle is not the whole story: threads a router starts only once envelopes flow
            # (the route worker pool) count too. One message through, then settle again.
            subprocess.run(traffic, shell=True, check=True)
            time.sleep(settle)
            after = status(router.pid)
            result["Threads_after_traffic"] = after["Threads"]
            result["VmRSS_after_traffic"] = after["VmRSS"]
            result["threads_after_traffic"] = thread_names(router.pid)
        stop(router)
        # Again with the files cached (the usual restart): start to ready only.
        router, warm_ms = start()
        result["ready_ms"] = round(warm_ms, 1)
        stop(router)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
