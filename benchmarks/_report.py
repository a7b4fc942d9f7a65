"""What every benchmark shares: the options that say where to measure and where the files go,
and what every report starts with (when, where, which versions)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable, Coroutine, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

#: Where the reports go by default: ``benchmarks/results``.
RESULTS = Path(__file__).parent / "results"

#: The servers a benchmark can start (``--server``).
SERVERS = ("moto", "dynamodb-local")


def parser(
    prog: str, description: str | None, *, endpoint_url: bool = True
) -> argparse.ArgumentParser:
    """A benchmark's command line with the options every benchmark takes: ``--server``,
    ``--endpoint-url`` (unless ``endpoint_url`` is false: the benchmark starts its own
    server) and ``--out``; the benchmark adds its own."""
    made = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    made.add_argument("--server", choices=SERVERS, default="moto")
    if endpoint_url:
        made.add_argument("--endpoint-url", help="measure this server instead of starting one")
    made.add_argument("--out", type=Path, default=RESULTS, help="where the files go")
    return made


def comma_separated(
    choices: Sequence[str], what: str = "strategies"
) -> Callable[[str], tuple[str, ...]]:
    """An argparse ``type``: a comma-separated list of some of ``choices``."""

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(part.strip() for part in text.split(",") if part.strip())
        unknown = set(names) - set(choices)
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {sorted(unknown)}; choose from {', '.join(choices)}"
            )
        return names

    return parse


#: The distributions whose versions a report records.
PACKAGES = (
    "aioseq",
    "aioboto3",
    "aiobotocore",
    "botocore",
    "boto3",
    "moto",
    "dynamodb-autoincrement",
)


def _proc_field(path: str, name: str) -> str | None:
    """The value of the first ``name: value`` line of a /proc file, if there is one."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.split(":", 1)[0].strip() == name:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine() -> dict[str, Any]:
    """The CPU, its core count, memory, OS and Python; the load average at the time (other work
    on the machine shows there)."""
    return {
        "cpu": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "memory": _proc_field("/proc/meminfo", "MemTotal"),
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def versions(packages: Sequence[str] = PACKAGES) -> dict[str, str | None]:
    """The installed version of each of ``packages`` (default :data:`PACKAGES`; ``None`` if
    not installed)."""
    found: dict[str, str | None] = {}
    for name in packages:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def revision() -> dict[str, Any] | None:
    """The git commit the code was measured at, and the files then changed from it (the work
    tree's ``git status --porcelain``, untracked files left out); ``None`` outside git."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=10
        ).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        changed = [line[3:] for line in git("status", "--porcelain", "-uno").splitlines()]
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "changed": changed}


def header(endpoint: str) -> dict[str, Any]:
    """Date, machine, versions, the code's revision, and the server measured."""
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": machine(),
        "versions": versions(),
        "revision": revision(),
        "endpoint": endpoint,
    }


def load_average() -> str:
    """The machine's load average now, as reports quote it."""
    load = os.getloadavg()
    return f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}"


def save(out: Path, name: str, report: dict[str, Any], text: str) -> None:
    """Write ``report`` as ``out/NAME.json`` and its markdown ``text`` as ``out/NAME.md``, and
    print the text."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    (out / f"{name}.md").write_text(text)
    print(text)


def measure_and_save(
    name: str,
    arguments: Sequence[str],
    args: argparse.Namespace,
    settings: dict[str, Any],
    run: Callable[[str], Coroutine[Any, Any, dict[str, Any]]],
    markdown: Callable[[dict[str, Any]], str],
) -> int:
    """The end of a benchmark's ``main()``: start ``args.server`` (see `parser()`), await
    ``run(endpoint)`` in a fresh event loop, and `save()` its report as
    ``args.out/NAME.json`` and ``.md``, with the command, date, load, server, versions and
    machine. Returns the exit status: 0 when the report's ``ok``, else 1."""
    import asyncio

    from benchmarks.row import server  # (starts servers: imported only by those that do)

    wrapper = "scripts/in-loopback-netns " if args.server == "dynamodb-local" else ""
    report: dict[str, Any] = {
        "command": f"{wrapper}.venv/bin/python -m benchmarks.{name} {' '.join(arguments)}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_at_start": load_average(),
        "settings": settings,
    }
    with server(args.server) as (endpoint, description):
        report.update(header(endpoint))
        report["server"] = description
        report.update(asyncio.run(run(endpoint)))
    report["load_at_end"] = load_average()
    report["machine"] = machine()
    save(args.out, name, report, markdown(report))
    return 0 if report["ok"] else 1
