"""The runtime reads targets itself: whether a value meets one, and whether a new target is at
least as strict as the old (the yardstick only tightens)."""

from __future__ import annotations

import pytest

from flamechase.flows.parrallello.yardstick import changes, meets, same, tighter_or_same


@pytest.mark.parametrize(
    ("value", "target", "ok"),
    [
        (10112, "<=20000", True),
        (20001, "<= 20,000", False),
        (3, ">=3", True),
        (1, ">=3", False),
        (2.5, "<3", True),
        (3, "<3", False),
        (4, ">3", True),
        (0, "exit 0", True),
        (1, "exit 0", False),
        (0, 0, True),
        ("0", "==0", True),
        ("120 ms", "<=150ms", True),
        (True, True, True),
        (True, "true", True),
        (1, True, False),  # a number is not a boolean
        (None, "<=5", False),
        ("green", "green", True),
        ("red", "green", False),
        ("n/a", "<=5", False),
    ],
)
def test_a_value_meets_its_target_as_the_runtime_reads_it(
    value: object, target: object, ok: bool
) -> None:
    assert meets(value, target) is ok


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        ("<=60", "<=60", True),
        ("<=60", "<= 60", True),
        ("<=60", "<=50", True),
        ("<=60", "<60", True),
        ("<60", "<=60", False),
        ("<=60", "<=100000", False),
        (">=3", ">=4", True),
        (">=3", ">=1", False),
        (">=3", "==5", True),  # an exact value inside the old range
        (">=3", "==1", False),
        ("==5", ">=5", False),
        ("<=60", ">=0", False),
        ("<=60ms", "<=50s", False),  # another unit is not comparable
        ("true", "true", True),
        ("true", "false", False),
    ],
)
def test_only_a_stricter_or_equal_target_is_not_a_loosening(old: str, new: str, ok: bool) -> None:
    assert tighter_or_same(old, new) is ok


def test_changes_names_missing_loosened_tightened_and_added_items() -> None:
    contract = {"a": "<=60", "b": ">=3", "c": "true", "d": "<=5"}
    printed = {"a": "<=50", "b": ">=1", "c": True, "e": "<=1"}
    assert changes(contract, printed) == (["d"], ["b"], ["a"], ["e"])
    assert same("<=20000", "<= 20_000")
