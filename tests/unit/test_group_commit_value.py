"""``GroupCommit``, the one value every grouping strategy takes, and how ``group=`` is read."""

from __future__ import annotations

from typing import Any

import pytest

from aioseq import ConfigurationError, GroupCommit
from aioseq.strategies._base import group_commit


def test_the_default_takes_as_many_as_a_request_holds_and_never_waits() -> None:
    assert GroupCommit() == GroupCommit(max_size=None, window_secs=0.0)


@pytest.mark.parametrize(
    "options",
    [
        {"max_size": 0},
        {"max_size": -1},
        {"max_size": 1.5},
        {"max_size": True},
        {"window_secs": -0.001},
        {"window_secs": 10.5},
        {"window_secs": float("nan")},
        {"window_secs": False},
        {"window_secs": "0"},
    ],
)
def test_bad_values_are_refused_where_they_are_written(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match=next(iter(options))):
        GroupCommit(**options)


def test_group_true_is_the_default_group_commit_and_false_is_none() -> None:
    assert group_commit(True) == GroupCommit()
    assert group_commit(False) is None
    chosen = GroupCommit(max_size=7, window_secs=0.25)
    assert group_commit(chosen) is chosen


@pytest.mark.parametrize("group", [None, 1, "yes", {"max_size": 3}])
def test_anything_else_for_group_is_refused(group: Any) -> None:
    with pytest.raises(ConfigurationError, match="group must be"):
        group_commit(group)
