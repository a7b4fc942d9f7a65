"""``python -m benchmarks.defaults``: the command line (see :mod:`benchmarks.defaults`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

import benchmarks.defaults as package
from benchmarks import _report
from benchmarks._report import header, machine
from benchmarks.defaults.bench import Result
from benchmarks.defaults.options import QUICK, SECTIONS, Options
from benchmarks.defaults.report import _jsonable, _recommendation_text, markdown
from benchmarks.defaults.sections import rows_planned, run
from benchmarks.row import server


def parser() -> argparse.ArgumentParser:
    parser = _report.parser("python -m benchmarks.defaults", package.__doc__)
    _report.add_settings(
        parser, Options(), ("sections",), quick=True, choices={"sections": SECTIONS}
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _command(args: argparse.Namespace, argv: Sequence[str]) -> str:
    python = Path(sys.executable)
    with contextlib.suppress(ValueError):
        python = python.relative_to(Path.cwd())
    wrapper = "scripts/in-loopback-netns " if args.server == "dynamodb-local" else ""
    return f"{wrapper}{python} -m benchmarks.defaults {' '.join(argv)}".strip()


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(arguments)
    options = _report.settings_from(args, Options(), ("sections",), QUICK)
    started = time.perf_counter()
    with server(args.server, args.endpoint_url) as (endpoint, description):
        report: dict[str, Any] = {
            "benchmark": "defaults",
            **header(endpoint),
            "server": description,
            "command": _command(args, arguments),
            "options": options,
        }
        with tqdm(
            total=rows_planned(options), unit="row", disable=args.no_progress, file=sys.stderr
        ) as bar:

            def done(result: Result) -> None:
                bar.set_postfix_str(
                    f"{result.section}: {result.row.label}, {result.row.tasks} tasks",
                    refresh=False,
                )
                bar.update()

            report.update(asyncio.run(run(options, endpoint, on_row=done)))
    report["load_average_at_end"] = machine()["load_average"]
    report["wall_secs"] = round(time.perf_counter() - started, 1)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "defaults.json").write_text(json.dumps(_jsonable(report), indent=2) + "\n")
    (out / "defaults.md").write_text(markdown(report))

    if report["recommendation"]:
        print(_recommendation_text(report["recommendation"]) + "\n")
    rows = len(report["results"])
    print(f"{rows} rows in {report['wall_secs']:.0f} s; wrote {out}/defaults.{{json,md}}")
    if not report["ok"]:
        failed = ", ".join(
            f"{r.section}: {r.row.label} ({r.row.tasks} tasks)"
            for r in report["results"]
            if not r.row.ok
        )
        print(f"FAILED: a guarantee was broken in {failed}", file=sys.stderr)
        return 1
    return 0
