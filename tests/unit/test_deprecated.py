"""Renamed public names keep working, and each warns at the line of the code that used it."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

import aioseq
from aioseq import GroupCommit, TransactionalCounter, iam
from aioseq.strategies._base import group_commit

ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/t"


def caught(use: Callable[[], Any]) -> tuple[Any, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = use()
    return result, seen


def test_gapless_counter_is_transactional_counter_and_warns_once_here() -> None:
    def use() -> Any:
        from aioseq import GaplessCounter  # one warning, though the import looks it up twice

        return GaplessCounter

    found, seen = caught(use)
    assert found is TransactionalCounter
    assert [w.category for w in seen] == [DeprecationWarning]
    assert seen[0].filename == __file__  # the user's line, where default filters show it
    assert "TransactionalCounter" in str(seen[0].message)


@pytest.mark.parametrize(
    "use",
    [
        lambda: aioseq.GaplessCounter,
        lambda: aioseq.strategies.GaplessCounter,
        lambda: aioseq.strategies.transactional.GaplessCounter,
    ],
    ids=["aioseq", "aioseq.strategies", "aioseq.strategies.transactional"],
)
def test_every_module_that_had_the_old_name_still_answers_to_it(use: Callable[[], Any]) -> None:
    found, seen = caught(use)
    assert found is TransactionalCounter
    assert len(seen) == 1 and seen[0].filename == __file__


def test_a_name_that_never_was_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="GaplesCounter"):
        aioseq.GaplesCounter  # type: ignore[attr-defined]  # noqa: B018


def test_the_old_iam_feature_name_gives_the_same_policy() -> None:
    policy, seen = caught(lambda: iam.policy(ARN, features=["gapless_counter"]))
    assert policy == iam.policy(ARN, features=["transactional_counter"])
    assert len(seen) == 1 and seen[0].filename == __file__


def test_the_old_group_keywords_warn_at_the_callers_line() -> None:
    grouping, seen = caught(lambda: group_commit(True, max_group_size=5, batch_window_secs=0.5))
    assert grouping == GroupCommit(max_size=5, window_secs=0.5)
    assert [w.filename for w in seen] == [__file__, __file__]


def test_the_old_demo_endpoint_helper_yields_a_given_endpoint_and_starts_nothing() -> None:
    from aioseq.demo import embedded_or_configured_endpoint

    def use() -> Any:
        with embedded_or_configured_endpoint("http://127.0.0.1:9") as found:
            return found

    found, seen = caught(use)
    assert found == ("http://127.0.0.1:9", False)
    assert len(seen) == 1 and seen[0].filename == __file__
