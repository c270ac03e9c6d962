"""The approval rule, applied by the runtime: 0 majors, 0 mediums and every gate PASS. The
critic's own word is advice."""

from __future__ import annotations

import itertools

import pytest

from flamechase.flows.parrallello.verdict import BuilderResult, Finding, PrepResult, Verdict, judge


def verdict(
    majors: int = 0,
    mediums: int = 0,
    minors: int = 0,
    *,
    approve: bool = True,
    declared: tuple[int, int, int] | None = None,
) -> Verdict:
    found = (
        [{"id": f"M{i}", "severity": "major", "title": "t"} for i in range(majors)]
        + [{"id": f"m{i}", "severity": "medium", "title": "t"} for i in range(mediums)]
        + [{"id": f"n{i}", "severity": "minor", "title": "t"} for i in range(minors)]
    )
    data = {"findings": found, "approve": approve, "summary": "s"}
    if declared:
        data["counts"] = dict(zip(("majors", "mediums", "minors"), declared, strict=True))
    return Verdict.model_validate(data)


@pytest.mark.parametrize(
    ("majors", "mediums", "gate"), list(itertools.product((0, 1), (0, 1), (True, False)))
)
def test_the_approval_truth_table(majors: int, mediums: int, gate: bool) -> None:
    j = judge(verdict(majors, mediums, minors=2, approve=True), gate)
    assert j.approved is (majors == 0 and mediums == 0 and gate)


def test_minors_never_block() -> None:
    assert judge(verdict(minors=5), True).approved


def test_a_critic_that_approves_with_a_failing_gate_is_overruled_and_recorded() -> None:
    j = judge(verdict(approve=True), gate_pass=False)
    assert not j.approved and j.mismatch and "approve=true" in j.mismatch


def test_a_critic_that_rejects_a_clean_round_is_overruled_too() -> None:
    j = judge(verdict(approve=False), gate_pass=True)
    assert j.approved and j.mismatch


def test_counts_are_recounted_from_the_findings() -> None:
    j = judge(verdict(majors=1, approve=False, declared=(0, 0, 0)), True)
    assert not j.approved and j.majors == 1 and "declared 0/0/0" in str(j.mismatch)


def test_the_runtimes_own_findings_count_and_no_verdict_never_approves() -> None:
    extra = [Finding(id="R-core-outside", severity="major", title="outside its files")]
    assert not judge(verdict(), True, extra).approved
    assert not judge(None, True, missing="no verdict").approved


def test_a_handoff_note_is_cut_to_its_first_fifteen_lines_and_3000_characters() -> None:
    note = "\n".join(f"line {i}" for i in range(1, 21))
    kept = BuilderResult.model_validate({"handoff": note}).handoff
    assert kept.splitlines() == [f"line {i}" for i in range(1, 16)]
    assert len(PrepResult.model_validate({"handoff": "y" * 5000}).handoff) == 3000
    with pytest.raises(ValueError):
        BuilderResult.model_validate({"handoff": "  \n "})  # an empty note is still refused


def test_a_verdict_carries_at_most_eight_tickets() -> None:
    many = [{"id": f"t{i}", "severity": "major", "title": "x"} for i in range(9)]
    with pytest.raises(ValueError):
        Verdict.model_validate({"approve": False, "summary": "s", "tickets": many})
