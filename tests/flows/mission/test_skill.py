"""parallel_flame_chase_mission's skill, `parallel-flame-chase-mission`: the lane protocol with
the mission rules (a status is the mission's outcome, audits, lane 1's integration missions),
mounted on every session of the flow, the coordinator's (plans and audits) too; the prompts
then keep the turn's facts and the coordinator's own task."""

from __future__ import annotations

from pathlib import Path

from flamechase.flows.parallel_flame_chase_mission import prompts as mp
from flamechase.flows.parallel_flame_chase_mission import skill as mission_skill
from flamechase.flows.parallel_flame_chase_mission.flow import LANES

OUTCOME_RULES = "The last three end the mission and start an audit"


def block(skill: str = "", package: tuple[dict[str, str], ...] = ()) -> str:
    return mp.mission_block(
        mission_id="M0002",
        status="active",
        turns=2,
        limit=6,
        deadline_at=1_800_000_000.0,
        package=package,
        skill=skill,
    )


def test_a_lane_turn_with_the_skill_mounted_is_told_its_missions_bounds_not_the_rules() -> None:
    plain, mounted = block(), block(mission_skill.NAME)
    assert OUTCOME_RULES in plain and OUTCOME_RULES not in mounted
    assert "Mission M0002 (active): 2 progress turns since it was dispatched, of 6" in mounted
    assert "2027-01-15T08:00:00Z" in mounted
    assert f"the mission's outcome ({mission_skill.NAME} skill)" in mounted
    package = ({"path": "fix.patch", "sha256": "ab" * 32, "blob": "/blobs/ab"},)
    integrating = block(mission_skill.NAME, package)
    assert "This is an integration mission" in integrating and "fix.patch" in integrating


def test_the_skill_holds_the_mission_rules_and_the_lane_protocol() -> None:
    words = " ".join(mission_skill.BODY.split())
    assert OUTCOME_RULES in words and "give their `evidence`" in words
    assert "Nothing holds a lane" in words  # unlike parallel_flame_chase: an audit instead
    assert "lane 1 gets an integration mission with the package" in words
    assert "it plans one bounded mission per lane, then decides each audit" in words
    for part in ("## Actor", "## Where you write", "## Artifacts", "## Checkpoint", "## Resume"):
        assert part in mission_skill.BODY
    # What it says of holds is what the flow does: its lanes run unheld.
    assert LANES.holds is False


def test_an_audit_session_refers_to_the_skill_and_keeps_its_decision_rules() -> None:
    packet = {"audit_id": "A0001", "revision": 1}
    report = Path("/io/decision.json")
    plain = mp.audit_prompt(packet=packet, targets=["lane-2"], report_path=report)
    mounted = mp.audit_prompt(
        packet=packet, targets=["lane-2"], report_path=report, skill=mission_skill.NAME
    )
    assert f"The lanes follow the {mission_skill.NAME} skill" in mounted
    assert f"follow the {mission_skill.NAME}" not in plain
    for own in ("Decide each target lane exactly once (lane-2)", "redirect", "/io/decision.json"):
        assert own in mounted
