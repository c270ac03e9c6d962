"""The runtime judges a gate's output itself and fails closed on every way it can mislead."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flamechase.flows.parrallello.gates import judge_gate


def receipt(output: str, exit_code: int | None = 0, error: str | None = None) -> dict[str, Any]:
    return {"output": output, "exit_code": exit_code, "error": error, "duration": 0.1}


def lines(
    items: list[dict[str, Any]],
    top: bool | None = None,
    summary: str | None = None,
    before: str = "",
) -> str:
    ok = all(i["pass"] for i in items) if top is None else top
    n = sum(1 for i in items if i["pass"])
    return (
        before
        + "RESULT_JSON "
        + json.dumps({"pass": ok, "items": items})
        + "\n"
        + (summary if summary is not None else f"SUMMARY {n}/{len(items)} PASS")
        + "\n"
    )


def item(i: str, ok: bool = True) -> dict[str, Any]:
    return {"id": i, "value": 1, "target": "<=1", "pass": ok}


def test_a_passing_gate_passes_with_its_counts() -> None:
    g = judge_gate(receipt(lines([item("a"), item("b"), item("c")], before="log line\n")))
    assert g.passed and g.reason is None and (g.n, g.m) == (3, 3)


def test_a_failing_gate_fails_plainly_and_keeps_its_failing_items() -> None:
    g = judge_gate(receipt(lines([item("a"), item("b", False)]), exit_code=1))
    assert not g.passed and g.reason is None and (g.n, g.m) == (1, 2)
    assert [i["id"] for i in g.failing] == ["b"]


def test_the_last_result_line_wins() -> None:
    out = lines([item("a", False)]) + lines([item("a"), item("b")])
    assert judge_gate(receipt(out)).passed


@pytest.mark.parametrize(
    ("out", "code", "error", "reason"),
    [
        ("all good\n", 0, None, "no-result-line"),
        ("RESULT_JSON {nope\nSUMMARY 1/1 PASS\n", 0, None, "bad-json"),
        (
            'RESULT_JSON {"pass": true, "items": [{"id": "a"}]}\nSUMMARY 1/1 PASS\n',
            0,
            None,
            "bad-json",
        ),
        ('RESULT_JSON {"pass": true, "items": []}\nSUMMARY 0/0 PASS\n', 0, None, "empty"),
        (lines([item("a"), item("a")]), 0, None, "duplicate-ids"),
        (lines([item("a")], summary=""), 0, None, "no-summary-line"),
        (lines([item("a"), item("b", False)], summary="SUMMARY 2/2 PASS"), 1, None, "inconsistent"),
        (lines([item("a"), item("b", False)], top=True), 0, None, "inconsistent"),
        (lines([item("a")]), 1, None, "inconsistent"),  # exit code against "pass"
        (lines([item("a", False)]), 0, None, "inconsistent"),
        (lines([item("a")], summary="SUMMARY 1/1 FAIL"), 0, None, "inconsistent"),
        (lines([item("a")]), 2, "exited with code 2", "crash"),
        ("", None, "cannot start /bin/sh: no such file", "crash"),
        (lines([item("a")]), None, "ran past 5s", "timeout"),
    ],
)
def test_every_misleading_output_fails_closed(
    out: str, code: int | None, error: str | None, reason: str
) -> None:
    g = judge_gate(receipt(out, code, error))
    assert not g.passed and g.reason == reason, g


def test_a_harness_that_drops_items_fails_unless_a_recalibration_removed_them() -> None:
    three = receipt(lines([item("a"), item("b"), item("c")]))
    two = receipt(lines([item("a"), item("b")]))
    assert judge_gate(three, previous=3).passed
    assert judge_gate(two, previous=3).reason == "dropped-items"
    assert judge_gate(two, previous=3, removed=1).passed


def test_items_outside_only_are_inconsistent() -> None:
    out = receipt(lines([item("T.ui.a"), item("T.core.b")]))
    assert judge_gate(out, only="T.ui.*").reason == "inconsistent"
    assert judge_gate(receipt(lines([item("T.ui.a")])), only="T.ui.*").passed


def test_an_item_whose_pass_flag_lies_fails_and_is_named() -> None:
    lying = {"id": "a", "value": 1, "target": ">=3", "pass": True}
    g = judge_gate(receipt(lines([lying, item("b")])))
    assert not g.passed and g.reason is None and (g.n, g.m) == (1, 2)
    assert g.lied == ("a",) and [i["id"] for i in g.failing] == ["a"]
    modest = {"id": "a", "value": 1, "target": "<=3", "pass": False}  # wrong the other way
    g = judge_gate(receipt(lines([modest]), exit_code=1))
    assert not g.passed and g.lied == ("a",)


@pytest.mark.parametrize(
    ("printed", "kw", "reason", "detail"),
    [
        ({"a": "<=1"}, {"plan": True}, "unbound", "the plan's target b has no item"),
        ({"a": "<=9", "b": "<=1"}, {"plan": True}, "unbound", "the plan says '<=1'"),
        ({"a": "<=1"}, {}, "dropped-items", "item b of the contract is missing"),
        ({"a": "<=0.5", "b": "<=1"}, {}, "target-moved", "prints target '<=0.5'"),
        ({"a": "<=9", "b": "<=1"}, {"tighten": True}, "loosened", "the contract says '<=1'"),
    ],
)
def test_a_run_is_held_to_the_fronts_contract(
    printed: dict[str, str], kw: dict[str, bool], reason: str, detail: str
) -> None:
    rows = [{"id": i, "value": 0, "target": t, "pass": True} for i, t in printed.items()]
    g = judge_gate(receipt(lines(rows)), contract={"a": "<=1", "b": "<=1"}, **kw)
    assert (g.passed, g.reason) == (False, reason) and detail in g.detail


def test_a_critics_stricter_target_and_new_item_pass_the_contract() -> None:
    rows = [
        {"id": "a", "value": 0, "target": "<=0.5", "pass": True},
        {"id": "b", "value": 0, "target": "<=1", "pass": True},
        {"id": "new", "value": 0, "target": "==0", "pass": True},
    ]
    g = judge_gate(receipt(lines(rows)), contract={"a": "<=1", "b": "<=1"}, tighten=True)
    assert g.passed and g.tightened == ("a",) and g.targets["new"] == "==0"
