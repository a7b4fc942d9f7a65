"""The sweep's recommendation: each group size and batch window against the library's
defaults, beyond the noise between rounds."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.defaults.bench import Result, _mean, _pooled_rate
from benchmarks.defaults.options import CURRENT_DEFAULTS, Options


@dataclass(frozen=True)
class Config:
    """One sweep configuration in one cell, over its rounds: puts/s pooled, p99 averaged."""

    rate: float
    p99_ms: float
    rates: tuple[float, ...]
    ok: bool
    errors: int


#: A sweep row's place: condition, strategy, tasks, max_group_size, batch_window_secs.
SweepKey = tuple[str, str, int, int, float]


def sweep_configs(results: Sequence[Result]) -> dict[SweepKey, Config]:
    """The sweep's rows, rounds merged."""
    grouped: dict[SweepKey, list[Result]] = {}
    for r in results:
        if r.section != "sweep":
            continue
        s = r.setting
        key = (
            s["condition"],
            s["strategy"],
            s["tasks"],
            int(s["max_group_size"]),
            float(s["batch_window_secs"]),
        )
        grouped.setdefault(key, []).append(r)
    return {
        key: Config(
            _pooled_rate(rows),
            _mean([r.row.p99_ms for r in rows]),
            tuple(r.rate for r in rows),
            all(r.row.ok for r in rows),
            sum(sum(r.row.errors.values()) for r in rows),
        )
        for key, rows in grouped.items()
    }


def recommend(results: Sequence[Result], options: Options) -> dict[str, Any]:
    """Compare each ``(max_group_size, batch_window_secs)`` of the sweep with the defaults.

    A cell is one condition, strategy and task count; sizes are named by the gapless
    counter's (99 stands for the sort-key counter's 100, the largest of each), and a size of
    at least the cell's task count is the default size there (a group never holds more puts
    than there are tasks). Over the cells where a configuration differs from the defaults,
    its puts/s and p99 are compared with theirs as ratios, averaged as logarithms.

    Noise: ``sigma``, the median standard deviation of log(puts/s) between the rounds of one
    configuration in one cell; a mean over ``n`` cells of ratios of rows pooled over ``R``
    rounds is good to ``sigma * sqrt(2 / R) / sqrt(n)``. A configuration beats the defaults
    when its throughput gain is more than twice that, it wins in at least two thirds of those
    cells, and its p99 is not worse by more than that. The recommendation is the one that
    beats them by most; the defaults are kept when none does.
    """
    configs = sweep_configs(results)
    if not configs:
        return {}
    largest = max(options.sweep_sizes)
    default = (largest, 0.0)

    def named(strategy: str, size: int) -> int:
        return largest if size == CURRENT_DEFAULTS[strategy][0] else size

    cells: dict[tuple[str, str, int], dict[tuple[int, float], Config]] = {}
    for (condition, strategy, tasks, size, window), config in configs.items():
        cells.setdefault((condition, strategy, tasks), {})[(named(strategy, size), window)] = config

    deviations = [
        statistics.stdev(math.log(r) for r in c.rates)
        for c in configs.values()
        if len(c.rates) > 1 and min(c.rates) > 0
    ]
    sigma = statistics.median(deviations) if deviations else 0.15
    rounds = max((len(c.rates) for c in configs.values()), default=1)

    comparisons = []
    for size in options.sweep_sizes:
        for window in options.sweep_windows:
            if (size, window) == default:
                continue
            gains, p99s = [], []
            for (_, _, tasks), found in cells.items():
                effective = (size if size < tasks else largest, window)
                if effective == default or effective not in found or default not in found:
                    continue
                mine, theirs = found[effective], found[default]
                if mine.rate <= 0 or theirs.rate <= 0:
                    continue
                gains.append(math.log(mine.rate / theirs.rate))
                if mine.p99_ms > 0 and theirs.p99_ms > 0:
                    p99s.append(math.log(mine.p99_ms / theirs.p99_ms))
            if not gains:
                continue
            n = len(gains)
            margin = 2 * sigma * math.sqrt(2 / rounds) / math.sqrt(n)
            gain, p99 = _mean(gains), _mean(p99s)
            wins = sum(g > 0 for g in gains)
            comparisons.append(
                {
                    "max_group_size": size,
                    "batch_window_secs": window,
                    "cells": n,
                    "puts_per_s_vs_defaults": round(math.exp(gain), 3),
                    "wins": wins,
                    "p99_vs_defaults": round(math.exp(p99), 3),
                    "margin": round(math.exp(margin) - 1, 3),
                    "beats_defaults": gain > margin and wins * 3 >= n * 2 and p99 <= margin,
                }
            )
    comparisons.sort(key=lambda c: -c["puts_per_s_vs_defaults"])
    better = [c for c in comparisons if c["beats_defaults"]]
    chosen = (
        max(better, key=lambda c: c["puts_per_s_vs_defaults"])
        if better
        else {"max_group_size": largest, "batch_window_secs": 0.0}
    )
    return {
        "sigma": round(sigma, 3),
        "rounds": rounds,
        "largest": largest,
        "comparisons": comparisons,
        "recommended": {
            "max_group_size": chosen["max_group_size"],
            "batch_window_secs": chosen["batch_window_secs"],
        },
        "keep_current": not better,
    }
