"""Browser-test harness of the web console (Python 3.11, standard library + Playwright).

- `Router(routes_yaml)`: a `switchyard run` with its admin port on a free port, as a context
  manager; `.base_url` is `http://127.0.0.1:PORT`, `.log()` what the router printed so far.
- `browser()`: a headless Chromium page (Debian's chromium, driven by Playwright), as a context
  manager; every wait of the page is bounded (10 s).
- `screenshot(page, name)`: a PNG under CONSOLE_TEST_OUTPUT (default `.build/console-tests/`).

No process outlives the test run: a router is started through `setpriv --pdeathsig KILL` as the
leader of a process group of its own (it gets SIGKILL from the kernel when the test process dies,
even by SIGKILL), and the whole group is killed when its `with` block ends, at exit (atexit) and on
SIGTERM/SIGHUP. The Playwright driver (node) exits when its pipe to the test process closes, and
closes the browser it started.

Environment: SWITCHYARD_BIN (default `.build/debug/switchyard`), SWITCHYARD_PLUGINS (default
`Plugins`), CHROMIUM_BIN (default Debian's `/usr/lib/chromium/chromium`, else `chromium` on PATH),
CONSOLE_TEST_OUTPUT. Relative paths are taken from the repository root.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # Playwright itself is imported when a browser starts
    from playwright.sync_api import Page

REPOSITORY = Path(__file__).resolve().parents[2]
SETPRIV = "/usr/bin/setpriv"
PAGE_TIMEOUT_MS = 10_000
ADMIN_LINE = re.compile(r"\baddress=(\S+) .*\badmin listening\b")


def _path(value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else REPOSITORY / path


def output_dir() -> Path:
    """Where screenshots (and whatever else a console test keeps) go; created on demand."""
    directory = _path(os.environ.get("CONSOLE_TEST_OUTPUT", ".build/console-tests"))
    directory.mkdir(parents=True, exist_ok=True)
    return directory


# --- Clean-up of every router, however the test run ends ----------------------------------------

_live_groups: dict[int, Path] = {}  # process group -> the router's temporary directory
_live_lock = threading.RLock()  # re-entered by a signal handler that interrupts the main thread


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _kill_all() -> None:
    with _live_lock:
        groups = list(_live_groups.items())
        _live_groups.clear()
    for pgid, directory in groups:
        _kill_group(pgid)
        shutil.rmtree(directory, ignore_errors=True)


def _on_signal(number: int, _frame: object) -> None:
    # Kill the routers, then die of the same signal (the Playwright driver sees its pipe close and
    # takes the browser down with it).
    _kill_all()
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)


atexit.register(_kill_all)
if threading.current_thread() is threading.main_thread():
    for _number in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(_number) in (signal.SIG_DFL, None):
            signal.signal(_number, _on_signal)


# --- The router -----------------------------------------------------------------------------------


class RouterError(RuntimeError):
    pass


class Router:
    """`switchyard run FILE --admin 127.0.0.1:0 --plugins DIR` on `routes` (YAML text), written
    to a temporary directory that is also the router's working directory (its spool and any
    files it writes land there and are removed afterwards).

    Start it from a thread that lives as long as the router should (the main thread, as unittest
    does): the kernel sends the parent-death signal when the *thread* that started it ends.
    """

    def __init__(
        self,
        routes: str,
        *,
        binary: str | os.PathLike[str] | None = None,
        plugins: str | os.PathLike[str] | None = None,
        extra_arguments: list[str] | tuple[str, ...] = (),
        environment: dict[str, str] | None = None,
        start_timeout: float = 20.0,
    ) -> None:
        self.routes = routes
        self.binary = _path(os.fspath(binary or os.environ.get("SWITCHYARD_BIN", ".build/debug/switchyard")))
        self.plugins = _path(os.fspath(plugins or os.environ.get("SWITCHYARD_PLUGINS", "Plugins")))
        self.extra_arguments = list(extra_arguments)
        self.environment = environment or {}
        self.start_timeout = start_timeout
        self.directory: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.address: str | None = None
        self._output = bytearray()
        self._changed = threading.Condition()
        self._ended = False
        self._reader: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self.address is None:
            raise RouterError("the router is not running")
        return f"http://{self.address}"

    def wait_for_output(self, seconds: float) -> None:
        """Returns when the router prints something, or after `seconds`: how a test awaits a
        change it cannot be told about directly without spinning."""
        with self._changed:
            self._changed.wait(seconds)

    def log(self) -> str:
        """Everything the router printed so far (standard output and standard error, merged)."""
        with self._changed:
            return self._output.decode("utf-8", "replace")

    def send(self, text: str) -> None:
        """Writes `text` to the router's standard input (the core console source reads it)."""
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(text.encode())
        self.process.stdin.flush()

    def __enter__(self) -> "Router":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if not os.access(self.binary, os.X_OK):
            raise RouterError(f"no switchyard binary at {self.binary} (swift build, or set SWITCHYARD_BIN)")
        self.directory = Path(tempfile.mkdtemp(prefix="switchyard-console-"))
        route_file = self.directory / "routes.yaml"
        route_file.write_text(self.routes)
        command = [
            SETPRIV, "--pdeathsig", "KILL", "--",
            str(self.binary), "run", str(route_file),
            "--admin", "127.0.0.1:0", "--plugins", str(self.plugins), *self.extra_arguments,
        ]  # fmt: skip
        # (A signal between the start and the registration leaves the router to its parent-death
        # signal: the handler ends this process.)
        with _live_lock:
            self.process = subprocess.Popen(
                command,
                cwd=self.directory,
                env={**os.environ, **self.environment},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                process_group=0,  # its own group: killing it takes anything it starts too
            )
            _live_groups[self.process.pid] = self.directory
        self._reader = threading.Thread(target=self._read, name="switchyard output", daemon=True)
        self._reader.start()
        self.address = self._wait_for_address()

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stream = self.process.stdout
        while chunk := stream.read1(65536):
            with self._changed:
                self._output += chunk
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def _wait_for_address(self) -> str:
        deadline = time.monotonic() + self.start_timeout
        with self._changed:
            while True:
                for line in self._output.decode("utf-8", "replace").splitlines():
                    if match := ADMIN_LINE.search(line):
                        return match.group(1)
                if self._ended:
                    status = self.process.wait(timeout=5) if self.process else None
                    raise RouterError(f"the router exited (status {status}) before its admin port listened:\n{self.log()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RouterError(f"the admin port did not listen within {self.start_timeout} s:\n{self.log()}")
                self._changed.wait(remaining)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM to the router (it drains and exits), then SIGKILL to its whole group; returns
        the exit status. Idempotent."""
        process, self.process = self.process, None
        status = None
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                status = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
            _kill_group(process.pid)
            status = process.wait()
            with _live_lock:
                _live_groups.pop(process.pid, None)
            if process.stdin:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            if self._reader:
                self._reader.join(timeout=5)
            if process.stdout:
                process.stdout.close()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
        self.address = None
        return status


# --- The browser ----------------------------------------------------------------------------------


def chromium_executable() -> str:
    """Debian's Chromium. The real binary rather than the /usr/bin/chromium wrapper script, which
    adds flags of its own (extensions, GPU rasterization) from /etc/chromium.d."""
    if explicit := os.environ.get("CHROMIUM_BIN"):
        return explicit
    for candidate in ("/usr/lib/chromium/chromium", shutil.which("chromium"), "/usr/bin/chromium"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("no chromium (scripts/setup installs Debian's; or set CHROMIUM_BIN)")


@contextlib.contextmanager
def browser(*, viewport: tuple[int, int] = (1280, 800), javascript: bool = True) -> Iterator["Page"]:
    """A page of a fresh headless Chromium (with JavaScript off when `javascript` is false);
    every wait (actions, navigation, `expect`) is bounded by 10 s. The browser is closed when
    the block ends."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=PAGE_TIMEOUT_MS)
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=chromium_executable(),
            headless=True,
            # As root Chromium refuses to run with its sandbox; Playwright adds --no-sandbox for
            # chromium_sandbox=False (said here so nobody turns it on). /dev/shm is small in
            # containers: use /tmp for shared memory.
            chromium_sandbox=False,
            args=["--disable-dev-shm-usage"],
            timeout=30_000,
        )
        try:
            context = instance.new_context(viewport={"width": viewport[0], "height": viewport[1]}, java_script_enabled=javascript)
            context.set_default_timeout(PAGE_TIMEOUT_MS)
            context.set_default_navigation_timeout(PAGE_TIMEOUT_MS)
            yield context.new_page()
        finally:
            instance.close()


def screenshot(page: "Page", name: str) -> Path:
    """Saves a full-page PNG of `page` as NAME.png under the output folder; returns its path."""
    path = output_dir() / (name if name.endswith(".png") else f"{name}.png")
    page.screenshot(path=str(path), full_page=True)
    return path


