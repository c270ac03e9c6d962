"""The yardstick only tightens, end to end through the real `flamechase` command: cheating
critics (a loosened target, a dropped item, an always-PASS gate "recalibrated" on trust, a gate
whose items lie about passing), a gate that does not print the plan's targets, and an honest
recalibration with its proof, taken between blocks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.flows.parrallello.scripted import git, repo
from tests.flows.parrallello.test_cli import by_front, run
from tests.helpers import cli, events, status

# The scripted gate's item for VALUE, as `scripted.GATE` writes it for a target.
VALUE_ITEM = '"target": ">={t}",\n          "pass": value >= {t}'


# An always-PASS gate: each item's target becomes its own value.
EVERYTHING_PASSES = "[dict(i, target=i['value'], **{'pass': True}) for i in items]"


def item(target: int) -> str:
    return VALUE_ITEM.format(t=target)


def anomalies(ws: Path) -> list[tuple[str, str]]:
    return [(a["what"], a["front"]) for a in status(ws)["anomalies"]]


def test_cheating_critics_are_refused_and_their_fronts_not_approved(tmp_path: Path) -> None:
    # Each builder takes VALUE from 1 to 2; each target is 3: no front meets its target.
    fronts: dict[str, dict[str, Any]] = {f: {"target": 3} for f in ("L", "D", "T", "A")}
    ws = repo(tmp_path, fronts, blocks=1, rounds_per_block=1)
    add = {"kind": "add_items", "items": ["T.L.value"], "reason": "a better bound"}
    config = {
        # Moves the failing item's target from >=3 to >=1 and calls it an added item.
        "L": {"critic_gate": {"sub": [[item(3), item(1)]], "changes": [add]}},
        # Drops the failing item from the gate.
        "D": {
            "critic_gate": {
                "sub": [["ok = all(", "items = items[1:]\nok = all("]],
                "changes": [{"kind": "add_items", "items": ["T.D.exists"], "reason": "fewer"}],
            }
        },
        # Rewrites the gate to pass everything, as a "recalibration" whose proof is a word.
        "T": {
            "critic_gate": {
                "sub": [["ok = all(", f"items = {EVERYTHING_PASSES}\nok = all("]],
                "changes": [
                    {
                        "kind": "recalibrate",
                        "items": ["T.T.value"],
                        "targets": {"T.T.value": 2},
                        "reason": "the target is too strict",
                        "proof": "trust me",
                    }
                ],
            }
        },
        "A": {},  # an honest critic: approves nothing that fails
    }
    proc = run(tmp_path, ws, {**config, **{f: {**config[f], "approve": True} for f in "LDT"}})
    assert proc.returncode == 1, proc.stderr
    evs = events(ws)
    verdicts = {f: v[0] for f, v in by_front(evs, "verdict_recorded").items()}
    assert not any(v["approved"] for v in verdicts.values())
    for f in "LDT":
        assert verdicts[f]["majors"] == 1, verdicts[f]  # the runtime's finding on the change
    seen = anomalies(ws)
    assert ("gate-loosened", "L") in seen
    assert ("gate-item-dropped", "D") in seen
    assert ("recalibration-unproven", "T") in seen
    assert not any(e["kind"] == "gate_refrozen" for e in evs)
    # Nothing of a refused change reaches a front's tree or your tree.
    places = {e["payload"]["place"]: e["payload"]["path"] for e in evs if e["kind"] == "place_made"}
    for f in "LDT":
        gate = (Path(places[f"fronts/{f}"]) / "gates" / f"{f}.py").read_text()
        assert gate == (ws / "gates" / f"{f}.py").read_text()
    assert item(3) in (ws / "gates" / "L.py").read_text()
    assert git(ws, "log", "--format=%s").splitlines() == ["start"]  # nothing landed
    # The loosening was tried (its trial run, not the front's tree) and refused.
    rechecks = [g for g in by_front(evs, "gate_ran")["L"] if g["stage"] == "recheck"]
    assert [g["reason"] for g in rechecks] == ["loosened"]


def test_a_gate_whose_items_lie_about_passing_is_judged_by_value_and_target(
    tmp_path: Path,
) -> None:
    ws = repo(tmp_path, {"P": {"mode": "lie", "target": 3}}, blocks=1, rounds_per_block=1)
    proc = run(tmp_path, ws, {"P": {"approve": True}})
    assert proc.returncode == 1, proc.stderr
    evs = events(ws)
    gates = by_front(evs, "gate_ran")["P"]
    assert [(g["passed"], g["n"], g["m"], g["failing"]) for g in gates] == [
        (False, 1, 2, ["T.P.value"]),
        (False, 1, 2, ["T.P.value"]),
    ]
    (verdict,) = by_front(evs, "verdict_recorded")["P"]
    assert not verdict["approved"] and verdict["critic_approve"] is True
    assert ("pass-flag-mismatch", "P") in anomalies(ws)
    assert (ws / "src" / "P" / "core.py").read_text() == "VALUE = 1\n"


def test_a_gate_that_does_not_print_the_plans_target_is_refused_at_p0(tmp_path: Path) -> None:
    fronts: dict[str, dict[str, Any]] = {
        "M": {"plan": {"targets": {"T.M.value": ">=2", "T.M.speed": "<=60"}}},
        "W": {"plan": {"targets": {"T.W.value": ">=1"}}},  # the gate prints >=2
    }
    ws = repo(tmp_path, fronts, blocks=1, rounds_per_block=1)
    proc = run(tmp_path, ws, {})
    assert proc.returncode == 1, proc.stderr
    ends = {f: e[0] for f, e in by_front(events(ws), "front_ended").items()}
    assert ends["M"]["status"] == "not_approved" and ends["M"]["rounds"] == 0
    assert ends["M"]["reason"] == (
        "the gate is refused at P0: the plan's target T.M.speed has no item in the gate's output"
    )
    assert ends["W"]["reason"] == (
        "the gate is refused at P0: item T.W.value prints target '>=2'; the plan says '>=1'"
    )
    assert {("gate-unbound", "M"), ("gate-unbound", "W")} <= set(anomalies(ws))
    # The run's last line: a row per front (rounds, score, minors left, cost).
    assert "M not approved (0 rounds, gate 1/2 FAIL (unbound), $0.00)" in proc.stderr + proc.stdout


def test_a_proven_recalibration_applies_between_blocks_and_is_recorded(tmp_path: Path) -> None:
    # The target (>=99) is out of reach; the critic of round 1 recalibrates it to >=3 with a
    # proof. Round 1 is judged on the gate as it was; block 2 runs on the recalibrated gate.
    ws = repo(tmp_path, {"P": {"target": 99}}, blocks=2, rounds_per_block=1)
    proof = {
        "reason": "reference-fails-gate",
        "measurement": "the reference solver reaches VALUE 3 at most (3 runs)",
        "date": "2026-12-01",
    }
    change = {
        "kind": "recalibrate",
        "items": ["T.P.value"],
        "targets": {"T.P.value": ">=3"},
        "reason": "no VALUE above 3 is reachable",
        "proof": proof,
    }
    config = {"P": {"critic_gate": {"round": 1, "sub": [[item(99), item(3)]], "changes": [change]}}}
    proc = run(tmp_path, ws, config)
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    kinds = [e["kind"] for e in evs if e["payload"].get("front") == "P"]
    # Proven in round 1, whose verdict is on the old gate; taken when block 1 ends.
    order = [
        k
        for k in kinds
        if k
        in (
            "recalibration_proven",
            "verdict_recorded",
            "block_ended",
            "gate_refrozen",
            "round_started",
        )
    ]
    assert order == [
        "round_started",
        "recalibration_proven",
        "verdict_recorded",
        "block_ended",
        "gate_refrozen",
        "round_started",
        "verdict_recorded",
        "block_ended",
    ]
    v1, v2 = by_front(evs, "verdict_recorded")["P"]
    assert not v1["approved"] and v1["gate"] == "1/2 FAIL" and v2["approved"]
    st = status(ws)["fronts"]["P"]
    (recal,) = st["contract"]["recalibrations"]
    assert recal["round"] == 1 and recal["applied_from_block"] == 2
    assert recal["changes"][0]["proof"] == proof
    assert st["contract"]["targets"]["T.P.value"] == ">=3"
    assert item(3) in (ws / "gates" / "P.py").read_text()  # the approved front's gate lands
    shown = cli("events", cwd=ws).stdout
    assert "recalibrated with proof in round 1 (reference-fails-gate on 2026-12-01" in shown
