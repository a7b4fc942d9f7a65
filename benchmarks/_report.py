"""What every benchmark shares: the options that say where to measure and where the files go,
what every report starts with (when, where, which versions), and the scaffold a benchmark's
``main()`` is (:func:`main`): it declares its settings and its measurement, nothing else."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

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


S = TypeVar("S", bound="DataclassInstance")


def _numbers(field: dataclasses.Field[Any]) -> Callable[[str], tuple[float | None, ...]]:
    """An argparse ``type``: comma-separated numbers (positive ints where the field is a tuple
    of ints); ``none`` (or ``0``) for none where the field's type allows ``None``."""
    optional = "None" in str(field.type)
    ints = "int" in str(field.type)

    def parse(text: str) -> tuple[float | None, ...]:
        def one(part: str) -> float | None:
            if optional and part in ("none", "0"):
                return None
            try:
                value = int(part) if ints else float(part)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(f"not a number: {part!r}") from exc
            if ints and value < 1:
                raise argparse.ArgumentTypeError(f"need positive ints: {text!r}")
            return value

        values = tuple(one(part.strip()) for part in text.split(",") if part.strip())
        if not values:
            raise argparse.ArgumentTypeError(f"no values in {text!r}")
        return values

    return parse


def _default_text(value: object) -> str:
    if isinstance(value, tuple):
        return ",".join("none" if v is None else f"{v:g}" if isinstance(v, float) else str(v)
                        for v in value)  # fmt: skip
    return f"{value:g}" if isinstance(value, float) else str(value)


def add_settings(
    parser: argparse.ArgumentParser,
    settings: DataclassInstance,
    options: Sequence[str],
    *,
    quick: bool,
    choices: Mapping[str, Sequence[str]] | None = None,
    notes: Mapping[str, str] | None = None,
) -> None:
    """Add ``--quick`` (if ``quick``) and ``--FIELD`` for each field of the frozen dataclass
    ``settings`` named in ``options`` to ``parser``: ``row_secs`` is ``--row-secs``, of the
    default's type; a tuple field takes a comma-separated list, of ``choices[FIELD]`` when
    given, else of numbers; ``notes[FIELD]`` goes before the default in its help. Read them
    back with `settings_from()`."""
    if quick:
        parser.add_argument("--quick", action="store_true", help="seconds: the smoke test's sizes")
    fields = {field.name: field for field in dataclasses.fields(settings)}
    for option in options:
        default = getattr(settings, option)
        if option in (choices or {}):
            known = tuple((choices or {})[option])
            kind: Callable[[str], Any] = comma_separated(known, option)
            every = "all" if tuple(default) == known else _default_text(default)
            text = f"comma-separated, from {','.join(known)} (default: {every})"
        else:
            kind = _numbers(fields[option]) if isinstance(default, tuple) else type(default)
            text = f"default: {_default_text(default)}"
        if option in (notes or {}):
            text = f"{(notes or {})[option]} ({text})"
        parser.add_argument(f"--{option.replace('_', '-')}", type=kind, help=text)


def settings_from(
    args: argparse.Namespace, settings: S, options: Sequence[str], quick: S | None = None
) -> S:
    """``quick`` (with ``--quick``) or ``settings``, with each of ``options`` given on the
    command line (see `add_settings()`) on top."""
    chosen = quick if quick is not None and args.quick else settings
    given = {option: getattr(args, option) for option in options}
    return dataclasses.replace(chosen, **{k: v for k, v in given.items() if v is not None})


def main(
    name: str,
    description: str | None,
    argv: Sequence[str] | None,
    settings: S,
    run: Callable[[S, str], Coroutine[Any, Any, dict[str, Any]]],
    markdown: Callable[[dict[str, Any]], str],
    *,
    options: Sequence[str],
    quick: S | None = None,
    choices: Mapping[str, Sequence[str]] | None = None,
    notes: Mapping[str, str] | None = None,
    plot: Callable[[dict[str, Any], Path], None] | None = None,
) -> int:
    """A benchmark's whole ``main()``: its command line, server, run and report.

    The command line is `parser()`'s (``--server``, ``--out``) and `add_settings()`'s
    (``--quick`` when there is a ``quick`` settings, ``--FIELD`` for each of ``options``);
    `measure_and_save()` runs ``run(settings_from(...), endpoint)`` and writes
    ``OUT/NAME.json`` and ``.md``; ``plot(report, OUT/NAME.png)`` then draws, if given.
    Returns the exit status: 0 when the report's ``ok``, else 1."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    made = parser(f"python -m benchmarks.{name}", description, endpoint_url=False)
    add_settings(made, settings, options, quick=quick is not None, choices=choices, notes=notes)
    args = made.parse_args(arguments)
    chosen = settings_from(args, settings, options, quick)
    code = measure_and_save(
        name,
        arguments,
        args,
        dataclasses.asdict(chosen),
        lambda endpoint: run(chosen, endpoint),
        markdown,
    )
    if plot is not None:
        out: Path = args.out
        plot(json.loads((out / f"{name}.json").read_text()), out / f"{name}.png")
    return code
