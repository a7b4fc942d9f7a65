"""The benchmarks' command lines come from one scaffold (``benchmarks._report``): a settings
dataclass's fields become options, ``--quick`` combines with them, bad values are refused, and
every option the docs and the Makefile's ``bench-*`` targets name still parses."""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass

import pytest

from benchmarks import _report


@dataclass(frozen=True)
class Settings:
    rounds: int = 3
    row_secs: float = 4.0
    concurrency: tuple[int, ...] = (1, 16)
    runways: tuple[float | None, ...] = (None, 30.0)
    sections: tuple[str, ...] = ("a", "b")


QUICK = Settings(rounds=1, row_secs=0.5)
OPTIONS = ("rounds", "row_secs", "concurrency", "runways", "sections")


def _parse(*argv: str) -> Settings:
    parser = argparse.ArgumentParser(exit_on_error=False)
    _report.add_settings(parser, Settings(), OPTIONS, quick=True, choices={"sections": ("a", "b")})
    return _report.settings_from(parser.parse_args(argv), Settings(), OPTIONS, QUICK)


def test_fields_become_options_and_quick_combines_with_them() -> None:
    assert _parse() == Settings()
    assert _parse("--quick") == QUICK
    assert _parse("--quick", "--rounds", "2") == Settings(rounds=2, row_secs=0.5)
    assert _parse("--row-secs", "1.5", "--concurrency", "4,8") == Settings(
        row_secs=1.5, concurrency=(4, 8)
    )
    assert _parse("--runways", "none,120").runways == (None, 120.0)
    assert _parse("--sections", "b").sections == ("b",)


@pytest.mark.parametrize(
    "argv",
    [
        ("--concurrency", "0"),  # tasks: positive ints
        ("--concurrency", "1.5"),
        ("--runways", "soon"),
        ("--sections", "c"),  # not one of the choices
        ("--rounds", "two"),
    ],
)
def test_bad_values_are_refused(argv: tuple[str, ...]) -> None:
    with pytest.raises((argparse.ArgumentError, SystemExit)):
        _parse(*argv)


#: Each benchmark's options, as docs/benchmarks.md, docs/development.md and the Makefile use
#: them (``--server`` and ``--out`` are every benchmark's).
DOCUMENTED = {
    "benchmarks.contention": "--quick --concurrency --processes --count --row-secs --strategies"
    " --block-sizes --warmup-secs --hot-calls --no-progress --endpoint-url",
    "benchmarks.defaults.command": "--quick --sections --no-progress --endpoint-url",
    "benchmarks.many_keys": "--quick --keys --rounds --row-secs --sections --no-tracemalloc"
    " --quiet --endpoint-url",
    "benchmarks.fairness": "--quick --rounds --row-secs --sections --strategies",
    "benchmarks.liveness": "--sections --strategies --processes --tasks --secs --deadlines",
    "benchmarks.outage": "--outage-secs --silent-secs --rate --runway-secs",
    "benchmarks.hard_days": "--items --rate --runway-run-secs --runways",
    "benchmarks.partitions": "--quick --puts --put-tasks --put-rounds --small-partition-wcu"
    " --tasks --row-secs",
    "benchmarks.global_tables": "--quick --numbers --tasks --rounds",
    "benchmarks.service": "--quick --secs --clients --rounds --warmup-secs --services --routes",
}


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_every_documented_option_is_still_there(
    module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    for option in ["--server", "--out", *DOCUMENTED[module].split()]:
        assert f"{option} " in shown or f"{option}\n" in shown, (module, option)
