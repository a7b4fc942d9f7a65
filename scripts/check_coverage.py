"""Fail when a module of the library core covers less than its share of lines.

coverage's own ``--fail-under`` checks the total only; this checks each module, against
``[tool.coverage.report] fail_under`` in pyproject.toml (the modules measured, and those left
out, are ``[tool.coverage.run]``'s). Reads the data ``coverage run`` left (``.coverage``), so
run it after ``coverage run -m pytest tests/unit`` (``make coverage`` does both):

    python scripts/check_coverage.py [--fail-under PERCENT]

Exit status 1, naming each module under the line, when one is; a module never imported counts
as 0%.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import coverage


def covered(data_file: str | None = None) -> dict[str, tuple[int, int]]:
    """Each measured module (path) -> (statements, statements run), modules never imported
    included, by coverage's own report (its JSON form)."""
    # (coverage's data_file=None means no file at all: leave it out for the default)
    cov = coverage.Coverage(data_file=data_file) if data_file else coverage.Coverage()
    cov.load()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "coverage.json"
        cov.json_report(outfile=str(out))
        files = json.loads(out.read_text())["files"]
    return {
        path: (f["summary"]["num_statements"], f["summary"]["covered_lines"])
        for path, f in files.items()
    }


def percent(statements: int, run: int) -> float:
    return 100.0 * run / statements if statements else 100.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--fail-under",
        type=float,
        default=None,
        help="the least percentage of lines per module (default: pyproject's fail_under)",
    )
    parser.add_argument("--data-file", default=None, help="coverage's data (default: .coverage)")
    args = parser.parse_args(argv)
    least = args.fail_under
    if least is None:
        least = float(coverage.Coverage().get_option("report:fail_under"))  # type: ignore[arg-type]
    found = covered(args.data_file)
    if not found:
        print("check_coverage: no measured module: run `coverage run` first", file=sys.stderr)
        return 1
    under = {path: percent(*counts) for path, counts in found.items() if percent(*counts) < least}
    for path, share in sorted(under.items()):
        statements, run = found[path]
        print(
            f"check_coverage: {path}: {share:.1f}% of its lines ({run} of {statements}),"
            f" under {least:g}%",
            file=sys.stderr,
        )
    if under:
        return 1
    lowest = min(found, key=lambda p: percent(*found[p]))
    print(
        f"check_coverage: every one of {len(found)} core modules covers >= {least:g}% of its"
        f" lines (the lowest: {lowest}, {percent(*found[lowest]):.1f}%)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
