"""moto's DynamoDB as a real HTTP server on 127.0.0.1, one request at a time.

moto's threaded server is not safe under concurrent requests: its DynamoDB backend has no
per-item locking, so concurrent ``ADD``s lose updates and return duplicate values, and its
transactions copy and roll back whole tables.
[`SerializedMotoServer`][aioseq.testing.SerializedMotoServer] serves moto's WSGI application behind
one lock (the response body is produced inside it), which removes those races at the same throughput
(moto's CPU cost per request is the limit either way, ~3 ms).

In-process ``mock_aws`` does not intercept aiohttp, which aiobotocore uses, hence a server.
Needs the ``server`` extra: ``pip install 'aioseq[server]'``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

from aioseq.testing._server import Server

__all__ = ["MotoServerProcess", "SerializedMotoServer", "main"]

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _OneAtATime:
    """WSGI middleware: one request inside the wrapped application at a time."""

    def __init__(self, app: WSGIApp) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self.lock:
            result = self.app(environ, start_response)
            try:
                return [b"".join(result)]
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()


class _TableBackups:
    """Stands in for the ``copy`` module inside ``moto.dynamodb.models``: moto's
    ``transact_write_items`` deep-copies a table once per *item* of the transaction that names
    it, as a backup to roll back to (moto 5.x), so a 100-item transaction copied a 500-item table
    100 times. Under the server's one lock, a table is copied once per transaction here: the
    same backup, ``copy.deepcopy`` for everything else."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.backups: dict[int, Any] | None = None  # by id(table), during one transaction

    def deepcopy(self, obj: Any) -> Any:
        if self.backups is None or type(obj).__name__ != "Table":
            return self._real.deepcopy(obj)
        backup = self.backups.get(id(obj))
        if backup is None:
            backup = self.backups[id(obj)] = self._real.deepcopy(obj)
        return backup

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _back_up_each_table_once() -> None:
    """Install `_TableBackups` in moto's DynamoDB backend (idempotent)."""
    from moto.dynamodb import models

    real = getattr(models, "copy")  # noqa: B009 (moto does not export it)
    if isinstance(real, _TableBackups):
        return
    backups = _TableBackups(real)
    transact = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: Any) -> None:
        backups.backups = {}
        try:
            transact(self, transact_items)
        finally:
            backups.backups = None

    setattr(models, "copy", backups)  # noqa: B010
    setattr(models.DynamoDBBackend, "transact_write_items", transact_write_items)  # noqa: B010


def _quiet_handler() -> type:
    """moto's request handler, without a log line per request, and with one ``Server`` header
    per answer (moto's; ``http.server`` adds its own, and aiohttp's strict parser, on under
    ``python -X dev``, refuses an answer with two)."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    class QuietHandler(MotoRequestHandler):
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass

        def send_response(self, code: int, message: str | None = None) -> None:
            self.send_response_only(code, message)  # no Server or Date of http.server's
            self.send_header("Date", self.date_time_string())

    return QuietHandler


class SerializedMotoServer(Server):
    """A moto DynamoDB server on ``host:port`` in a background thread, requests serialized.

    Use as a context manager, or ``start()`` / ``stop()``:

        with SerializedMotoServer() as server:
            async with DynamoStore.open(endpoint_url=server.endpoint_url) as store: ...

    Parameters:
        host: the address to listen on; keep the default loopback address.
        port: the TCP port; 0 picks a free one.

    Raises:
        ImportError: moto (the ``server`` extra) is not installed.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start serving (returns once the socket listens). Idempotent."""
        if self._server is not None:
            return
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        _back_up_each_table_once()
        app = _OneAtATime(DomainDispatcherApplication(create_backend_app))
        self._server = make_server(
            self.host, self.port, app, threaded=True, request_handler=_quiet_handler()
        )
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="aioseq-moto", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and free the port (~0.5 s). Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``; valid after
        [`start()`][aioseq.testing.SerializedMotoServer.start]."""
        if self._server is None:
            raise RuntimeError("the server is not running; call start() first")
        return f"http://{self.host}:{self.port}"

    def reset(self) -> None:
        """Drop every table and item (moto's ``POST /moto-api/reset``, ~10 ms)."""
        _reset(self.endpoint_url)

    def __repr__(self) -> str:
        state = f"serving {self.endpoint_url}" if self._server is not None else "stopped"
        return f"<SerializedMotoServer {state}>"


def _reset(endpoint_url: str) -> None:
    request = urllib.request.Request(f"{endpoint_url}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=30):
        pass


class MotoServerProcess(Server):
    """A [`SerializedMotoServer`][aioseq.testing.SerializedMotoServer] in a child process (``python
    -m aioseq.testing.moto_server``), so that moto's CPU work runs beside the client's instead of
    sharing its interpreter lock: about twice the requests per second on two cores. Same interface
    as [`SerializedMotoServer`][aioseq.testing.SerializedMotoServer].

    Parameters:
        port: the TCP port on 127.0.0.1; 0 picks a free one.
        startup_timeout_secs: how long to wait for the child to listen.

    Raises:
        RuntimeError: from [`start()`][aioseq.testing.MotoServerProcess.start], if the child did not
            start in time.
    """

    def __init__(self, port: int = 0, *, startup_timeout_secs: float = 60.0) -> None:
        self.port = port
        self.startup_timeout_secs = startup_timeout_secs
        self._process: subprocess.Popen[str] | None = None
        self._endpoint_url: str | None = None

    def start(self) -> None:
        """Start the child and wait until it prints its endpoint. Idempotent."""
        if self._process is not None:
            return
        process = subprocess.Popen(
            [sys.executable, "-m", "aioseq.testing.moto_server", "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self._process = process
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(self.startup_timeout_secs)
        if not line or not line[0].startswith("http://"):
            self.stop()
            raise RuntimeError("the moto server process did not start")
        self._endpoint_url = line[0].strip()
        self.port = int(self._endpoint_url.rsplit(":", 1)[1])

    def stop(self) -> None:
        """Stop the child (SIGTERM, then SIGKILL after 10 s). Idempotent."""
        process, self._process = self._process, None
        self._endpoint_url = None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``; valid after
        [`start()`][aioseq.testing.MotoServerProcess.start]."""
        if self._endpoint_url is None:
            raise RuntimeError("the server is not running; call start() first")
        return self._endpoint_url

    def reset(self) -> None:
        """Drop every table and item (moto's ``POST /moto-api/reset``)."""
        _reset(self.endpoint_url)

    def __repr__(self) -> str:
        state = f"serving {self._endpoint_url}" if self._endpoint_url else "stopped"
        return f"<MotoServerProcess {state}>"


def main(argv: list[str] | None = None) -> int:
    """``python -m aioseq.testing.moto_server [--port N]``: serve until SIGTERM or SIGINT;
    the first line on stdout is the endpoint URL."""
    parser = argparse.ArgumentParser(prog="python -m aioseq.testing.moto_server")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with SerializedMotoServer(port=args.port) as server:
        print(server.endpoint_url, flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    code = main()
    # Skip the interpreter's teardown: after a few hundred transactions moto's copies of its
    # tables make the final garbage collection take longer than MotoServerProcess.stop() waits
    # (10 s), and there is nothing left to flush or close.
    sys.stdout.flush()
    os._exit(code)
