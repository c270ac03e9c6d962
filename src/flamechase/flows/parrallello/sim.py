"""parrallello's simulated actor: real, small, deterministic work on the bundled sample, by
role (the brief in `$FLAMECHASE_BRIEF`), every program run as the turn's own (in its jail).

- planner: two fronts on the sample (P1: the solver under 20,000 STEPS with its tests green;
  P2, a wave later: the README states the STEPS the bench prints), one on any other tree
  (N1: NOTES.md gets a line per round).
- prep: writes the front's gate script (the gate contract, `--quick`/`--full`/`--only`), runs
  it for a baseline, and returns the first tickets.
- builder: on P1 climbs one rung of the solver ladder, on P2 writes the measured STEPS into
  the README, elsewhere appends a line to its file; runs the quick gate; a handoff note.
- critic: a major per failing gate item (as a ticket on that item), a minor on the first
  round, and on P1's first round a probe it adds to the gate script (dated, declared).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flamechase.flow.sim import SimActor, SimTurn
from flamechase.flows.sample_lanes import is_sample
from flamechase.flows.sample_lanes.ladder import RUNGS, next_rung, rung_of

__all__ = ["ACTOR", "FrontsActor"]

STEPS_TARGET = 20_000
_TIMEOUT = 60.0

GATE = '''"""Gate of front {front}: {goal}. Prints RESULT_JSON and SUMMARY n/m PASS."""
import fnmatch, json, re, subprocess, sys

EXTRA = []  # probes the review added, dated: (item id, what it checks)
# probes above this line


def run(*args):
    p = subprocess.run([sys.executable, "-S", "-B", *args], capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout


def steps():
    code, out = run("bench.py")
    found = re.findall(r"^STEPS: (\\d+)$", out, re.M)
    return int(found[-1]) if code == 0 and found else None


items = []
{checks}
for item_id, what in EXTRA:
    if what == "tests_ran":
        code, _ = run("-m", "unittest", "-q")
        items.append({{"id": item_id, "value": code, "target": 0, "pass": code == 0}})
if "--only" in sys.argv:
    pattern = sys.argv[sys.argv.index("--only") + 1]
    items = [i for i in items if fnmatch.fnmatchcase(i["id"], pattern)]
ok = all(i["pass"] for i in items)
print("RESULT_JSON " + json.dumps({{"pass": ok, "items": items}}))
print(f"SUMMARY {{sum(i['pass'] for i in items)}}/{{len(items)}} PASS")
sys.exit(0 if ok else 1)
'''

CHECKS = {
    "P1": """s = steps()
items.append({"id": "T.P1.steps", "value": s, "target": "<=20000",
              "pass": s is not None and s <= 20000})
if "--full" in sys.argv:
    code, _ = run("-m", "unittest", "-q")
    items.append({"id": "T.P1.tests", "value": code, "target": 0, "pass": code == 0})""",
    "P2": """s = steps()
text = open("README.md").read()
items.append({"id": "T.P2.readme", "value": f"STEPS: {s}" in text,
              "target": True, "pass": f"STEPS: {s}" in text})""",
    "N1": """lines = [ln for ln in open("NOTES.md").read().splitlines() if ln.strip()] \\
    if __import__("os").path.exists("NOTES.md") else []
items.append({"id": "T.N1.lines", "value": len(lines), "target": ">=2",
              "pass": len(lines) >= 2})""",
}


class FrontsActor(SimActor):
    async def act(self, turn: SimTurn) -> dict[str, Any]:
        """The result of one simulated turn of its role (it has done its work in the tree)."""
        ws, env = turn.workspace, turn.env
        if turn.role == "planner":
            return _plan(ws, int(env.get("FLAMECHASE_FRONTS_MAX", "3") or 3))
        brief = json.loads(env.get("FLAMECHASE_BRIEF") or "{}")
        if turn.role == "prep":
            return await _prep(turn, brief)
        if turn.role == "critic":
            return await _review(turn, brief)
        if turn.role == "lead":  # never sees code: decides from the tickets it is given
            ids = [t["id"] for t in brief.get("open_tickets", [])]
            return {"lead_note": f"sim lead: close {', '.join(ids[:4]) or 'nothing'} first"}
        return await _build(turn, brief)


ACTOR = FrontsActor()


def _plan(ws: Path, limit: int) -> dict[str, Any]:
    if not is_sample(ws):
        return {
            "fronts": [
                {
                    "id": "N1",
                    "goal": "NOTES.md records the work, a line a round",
                    "gate": "python3 gates/N1.py",
                    "owners": {"notes": ["NOTES.md"]},
                    "targets": {"T.N1.lines": ">=2"},
                }
            ],
            "blocks": 2,
            "rounds_per_block": 2,
        }
    fronts = [
        {
            "id": "P1",
            "goal": f"solver.py under {STEPS_TARGET} STEPS, tests green",
            "wave": 1,
            "weight": 3,
            "gate": "python3 gates/P1.py",
            "owners": {"solver": ["solver.py"]},
            "targets": {"T.P1.steps": f"<={STEPS_TARGET}", "T.P1.tests": "exit 0"},
        },
        {
            "id": "P2",
            "goal": "the README states the STEPS the bench prints",
            "wave": 2,
            "depends_on": ["P1"],
            "weight": 1,
            "gate": "python3 gates/P2.py",
            "owners": {"docs": ["README.md"]},
            "targets": {"T.P2.readme": "true"},  # the README states the measured STEPS
        },
    ]
    return {"fronts": fronts[: max(1, limit)], "blocks": 2, "rounds_per_block": 3}


async def _prep(turn: SimTurn, brief: Mapping[str, Any]) -> dict[str, Any]:
    ws = turn.workspace
    front = str(brief.get("front"))
    gate = ws / "gates" / f"{front}.py"
    if not gate.exists():
        gate.parent.mkdir(parents=True, exist_ok=True)
        gate.write_text(
            GATE.format(front=front, goal=brief.get("goal"), checks=CHECKS.get(front, CHECKS["N1"]))
        )
    code, out = await _run(turn, [sys.executable, str(gate), "--full"])
    summary = next((ln for ln in out.splitlines() if ln.startswith("SUMMARY")), "no SUMMARY")
    owner = next(iter(brief.get("files") or {"core": []}))
    tickets = [
        {
            "id": f"P-{item['id']}",
            "severity": "major",
            "owner": owner,
            "gate": item["id"],
            "title": f"{item['id']}: {item['value']!r}, target {item['target']!r}",
        }
        for item in _items(out)
        if not item.get("pass")
    ]
    return {
        "tickets": tickets[:8],
        "baseline": summary,
        "handoff": f"gate gates/{front}.py written; baseline {summary} (exit {code})",
    }


async def _build(turn: SimTurn, brief: Mapping[str, Any]) -> dict[str, Any]:
    ws = turn.workspace
    front = str(brief.get("front"))
    if front == "P1" and is_sample(ws):
        text = (ws / "solver.py").read_text()
        target = next_rung(rung_of(text), 1)
        did = "already at the best rung"
        if target is not None:
            (ws / "solver.py").write_text(RUNGS[target].source)
            did = f"solver.py -> {RUNGS[target].approach}"
    elif front == "P2" and is_sample(ws):
        _, out = await _run(turn, [sys.executable, "-S", "-B", "bench.py"])
        steps = re.findall(r"^STEPS: (\d+)$", out, re.M)
        line = f"Measured with python bench.py: STEPS: {steps[-1] if steps else '?'}"
        readme = ws / "README.md"
        text = re.sub(r"\n*Measured with python bench.py: .*\n?", "\n", readme.read_text())
        readme.write_text(text.rstrip("\n") + "\n\n" + line + "\n")
        did = line
    else:
        notes = ws / "NOTES.md"
        with open(notes, "a", encoding="utf-8") as f:
            f.write(f"- round {brief.get('round')}: a simulated builder was here\n")
        did = "NOTES.md: one more line"
    quick = str((brief.get("gate") or {}).get("quick") or "")
    _, out = await _run(turn, ["/bin/sh", "-c", quick]) if quick else (0, "")
    summary = next((ln for ln in out.splitlines() if ln.startswith("SUMMARY")), "")
    return {
        "tickets": [
            {"id": t["id"], "status": "claimed_fixed", "evidence": did}
            for t in brief.get("tickets") or []
        ],
        "handoff": f"{did}\nquick gate: {summary or 'not run'}",
        "quick_gate": summary,
    }


async def _review(turn: SimTurn, brief: Mapping[str, Any]) -> dict[str, Any]:
    ws = turn.workspace
    front, rnd = str(brief.get("front")), int(brief.get("round") or 1)
    run = (brief.get("gate") or {}).get("full_run") or {}
    owner = next(iter(brief.get("owners") or {"core": []}))
    findings: list[dict[str, Any]] = []
    tickets: list[dict[str, Any]] = []
    for item in run.get("failing") or []:
        findings.append(
            {
                "id": f"gate-{item['id']}",
                "severity": "major",
                "title": f"{item['id']} misses its target",
                "owner": owner,
                "evidence": f"value {item.get('value')!r}, target "
                f"{item.get('target')!r} (the runtime's --full run)",
            }
        )
        tickets.append(
            {
                "id": f"C-{item['id']}",
                "severity": "major",
                "owner": owner,
                "gate": item["id"],
                "title": f"bring {item['id']} to its target",
            }
        )
    if run.get("fails_closed"):
        findings.append(
            {
                "id": "gate-closed",
                "severity": "major",
                "owner": owner,
                "title": f"the gate fails closed ({run['fails_closed']})",
            }
        )
    if rnd == 1:
        findings.append(
            {
                "id": "naming",
                "severity": "minor",
                "title": "a name could be clearer",
                "evidence": "style only",
            }
        )
    changes = _probe(ws, front) if rnd == 1 and front == "P1" else []
    majors = sum(1 for f in findings if f["severity"] == "major")
    return {
        "findings": findings,
        "tickets": tickets[:8],
        "counts": {"majors": majors, "mediums": 0, "minors": len(findings) - majors},
        "approve": bool(run.get("passed")) and not majors,
        "gate_changes": changes,
        "summary": f"round {rnd}: {majors} major finding{'' if majors == 1 else 's'} from "
        "the gate's own run",
    }


def _probe(ws: Path, front: str) -> list[dict[str, Any]]:
    """Add a dated probe to the gate script (the critic's way to make the yardstick
    stricter); declared, so the runtime takes it and freezes the gate again."""
    gate = ws / "gates" / f"{front}.py"
    if not gate.exists() or "# probes above this line" not in gate.read_text():
        return []
    day = datetime.now(UTC).date().isoformat()
    gate.write_text(
        gate.read_text().replace(
            "# probes above this line",
            f'EXTRA.append(("T.{front}.tests_ran", "tests_ran"))  # added {day} in review\n'
            "# probes above this line",
        )
    )
    return [
        {
            "kind": "add_items",
            "items": [f"T.{front}.tests_ran"],
            "reason": "the unit tests must run green on every round, not only claimed",
        }
    ]


def _items(output: str) -> list[dict[str, Any]]:
    for line in reversed(output.splitlines()):
        if line.startswith("RESULT_JSON "):
            try:
                data = json.loads(line[12:])
            except ValueError:
                return []
            return [i for i in data.get("items", []) if isinstance(i, dict)]
    return []


async def _run(turn: SimTurn, argv: list[str]) -> tuple[int, str]:
    check = await turn.runner.run(argv, turn.workspace, timeout=_TIMEOUT)
    return (1 if check.code is None else check.code), check.output
