"""What each fresh agent is told: a brief (JSON, also in `$FLAMECHASE_BRIEF` for scripts) and
the words around it. Files, not chat: tickets, handoff notes of at most 15 lines, verdicts;
nobody reads another agent's transcript."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flamechase.flows.parrallello import runtime as rt
from flamechase.flows.parrallello import sheets
from flamechase.flows.parrallello.plan import FrontSpec, PlanSpec
from flamechase.flows.parrallello.state import FrontState, RoundState

__all__ = [
    "CRITIC_RULES",
    "LEAD_NOTE_RULE",
    "PLANNER_RULES",
    "PREP_RULES",
    "RULES",
    "builder_brief",
    "critic_brief",
    "planner_prompt",
    "prep_brief",
    "words",
]

RULES = (
    "You are a fresh session: everything you need is in this brief and in the files it names.",
    "Write only the files in your list. Edits elsewhere are found from the diff, reverted, "
    "and fail your tickets; an edit to a gate file refuses the whole round's work.",
    "Never weaken a gate or a threshold; never commit, push or kill processes you did not start.",
    "Iterate with the quick gate; the runtime runs the full gate itself at the end of the "
    "round, and only its run counts.",
    "Long work (builds, renders, benchmarks) goes through `job start` / `job wait --max 540`; "
    "wait for or kill your own jobs before you finish (orphans are reaped at round end).",
    "Performance measurements only under the lock (`lock run --who ME --max 900 -- CMD`); the "
    "runtime's gates take it first (exit 76: CMD was ended for one, run it again).",
    "Keep output out of your context: run noisy commands with their output to a file and read "
    "the tail.",
    "At your ceiling, write your handoff note (at most 15 lines) and stop.",
    f"Numbers first, eyes last: the gate decides. An image the critic should see (a render, "
    f"a plot) goes into {rt.SHEETS}/ of your copy (never taken into the front's tree); the "
    f"runtime takes at most {rt.SHEETS_MAX} of all builders' to the critic, decoded and "
    f"downsized to {rt.SHEETS_PX} px, and refuses links, non-images and the rest.",
)

CRITIC_RULES = (
    "Assume the work is wrong and try to refute that the front meets its targets; "
    "every finding needs evidence. Torn between two severities, pick the higher.",
    "major: a target or criterion not met, wrong behaviour, data loss, a security "
    "flaw, a claim of 'fixed' the evidence contradicts. medium: a changed behaviour "
    "no test would catch, an edge case wrong, a defect that will cost a later round. "
    "minor: naming, comments, docs, style.",
    "Do not edit the front's files. You may add gate items for what you probed "
    "(dated, in the gate script) and make targets stricter, declared in gate_changes "
    "(add_items): the runtime runs the changed gate first and takes it only if no "
    "item is removed or renamed and no target is looser. The yardstick only tightens.",
    "A recalibration (kind recalibrate: new `targets` for the items it names, items "
    "it `removes`) needs a proof record {reason: resolution|noise|denominator|"
    "clock-contention|reference-fails-gate, measurement: what you measured, date: "
    "YYYY-MM-DD}; it is written into the front's contract and applies from the next "
    "block, never to this round. Anything else is refused and blocks approval.",
    "Numbers first, eyes last: judge by the gate's output and your own "
    f"measurements; look at images only after, at most {rt.SHEETS_MAX} contact sheets of at "
    f"most {rt.SHEETS_PX} px: the runtime takes them from the builders' images into "
    f"{rt.SHEETS}/ of your copy (the brief's contact_sheets).",
    "Return at most 8 tickets, each for one owner, most severe first.",
    "Approval is 0 majors, 0 mediums and every gate PASS: the runtime recounts your "
    "findings and applies the rule itself.",
)


PREP_RULES = (
    "One pass, no review: stage this front so its first round starts warm.",
    "Make sure the gate exists and follows the contract (write it if it is missing: "
    "one item per target, ids like T.<part>.<metric>), run it --full for a baseline, "
    "and return the first tickets (at most 8, most severe first, each closing on a "
    "gate item).",
    "You may also write code in this front's own files that collides with nothing in "
    "flight; never touch files of fronts in flight (listed) or other fronts' gates.",
    "At most one heavy job, no lock.",
)

# The planner's rules: how fronts are cut (the seed's "split fronts by files, not by theme").
PLANNER_RULES = (
    "Read the repository first; plan only: no edits.",
    "Split by files, not by theme: each front has 1 or 2 owners, each owning globs no other "
    "writer of its wave owns.",
    "Give each front numeric targets checked by a gate command (run with --quick/--full, "
    "printing RESULT_JSON and SUMMARY n/m PASS; a prep agent writes missing gates) and the "
    "gate's files to freeze, so builders cannot move the yardstick.",
    "Order fronts in waves with their dependencies (a dependency is in an earlier wave), and "
    "give each a progress weight.",
)

_LEAD_RULE = ("The lead's note (lead_note) binds this block: follow it.",)
# The same, as a role's skill says it (mounted once, for every block, with or without a note).
LEAD_NOTE_RULE = (
    "A lead's note (the brief's lead_note), when there is one, binds this block: follow it."
)


def _gate(spec: FrontSpec, who: str, front: FrontState | None = None) -> dict[str, Any]:
    return {
        "quick": rt.quick_command(spec, who),
        "full": rt.gate_command(spec, "full"),
        "only": spec.only,
        # The contract once the front runs: the plan's targets and every item since added
        # or tightened (the runtime computes each item's pass from its value and target).
        "targets": dict(front.contract) if front and front.contract else spec.targets,
        "recalibrations": list(front.recalibrations) if front else [],
        "frozen": list(spec.freeze),
        "exclusive": spec.exclusive,
        "contract": 'prints RESULT_JSON {"pass": bool, "items": [{"id", "value", '
        '"target", "pass"}]} and SUMMARY n/m PASS; --only GLOB selects items',
    }


def _earlier_notes(front: FrontState, rs: RoundState) -> dict[str, str]:
    """The handoff notes the round before left (prep's, before round 1), by who wrote them.
    `front.handoffs` changes only when a round closes, so during round N it holds N-1's."""
    notes = dict(front.handoffs)
    if rs.number == 1 and front.prep.result:
        notes["prep"] = str(front.prep.result.get("handoff", ""))
    return notes


def builder_brief(
    plan: PlanSpec, spec: FrontSpec, front: FrontState, rs: RoundState, owner: str
) -> dict[str, Any]:
    b = rs.builders[owner]
    notes = _earlier_notes(front, rs)
    return {
        "role": "builder",
        "front": spec.id,
        "goal": spec.goal or spec.label,
        "round": rs.number,
        "block": rs.block,
        "round_in_block": rs.in_block,
        "rounds_max": plan.blocks * plan.rounds_per_block,
        "owner": owner,
        "files": list(spec.owners[owner]),
        "tickets": [t.brief() for t in b.tickets],
        "recurring": [t.id for t in b.tickets if t.rounds_open >= 2],
        "ceiling": {"calls": rs.ceiling, "context_tokens": 120_000},
        "gate": _gate(spec, f"{spec.id}.{owner}", front),
        "handoffs": notes,
        "lead_note": front.lead_note,
        "machine": rt.machine_commands(),
        "rules": [*RULES, *_LEAD_RULE[: bool(front.lead_note)]],
        "result": {
            "tickets": [
                {"id": "...", "status": "claimed_fixed|disputed|not_done", "evidence": "..."}
            ],
            "handoff": "at most 15 lines for the next round and the review",
            "files_touched": ["..."],
            "quick_gate": "the SUMMARY line you saw",
        },
    }


# long: the critic's brief is one text, read top to bottom
def critic_brief(
    plan: PlanSpec, spec: FrontSpec, front: FrontState, rs: RoundState
) -> dict[str, Any]:
    gate = rs.gate
    builders = {
        o: {
            "tickets": [t.brief() for t in b.tickets],
            "claims": (b.result or {}).get("tickets", []),
            "handoff": (b.result or {}).get("handoff", ""),
            "taken": (b.diff or {}).get("accepted", {}).get("paths", []),
            "reverted": (b.diff or {}).get("outside", {}).get("paths", []),
            "failed": b.error,
        }
        for o, b in rs.builders.items()
    }
    return {
        "role": "critic",
        "front": spec.id,
        "goal": spec.goal or spec.label,
        "round": rs.number,
        "block": rs.block,
        "rounds_max": plan.blocks * plan.rounds_per_block,
        "owners": {o: list(g) for o, g in spec.owners.items()},
        "gate": {
            **_gate(spec, f"{spec.id}.critic", front),
            "full_run": None
            if gate is None
            else {
                "summary": f"SUMMARY {gate.n}/{gate.m} {'PASS' if gate.passed else 'FAIL'}",
                "passed": gate.passed,
                "fails_closed": gate.reason,
                "detail": gate.detail,
                "failing": list(gate.failing),
            },
        },
        "builders": builders,
        "contact_sheets": sheets.brief(rs),
        "earlier_handoffs": _earlier_notes(front, rs),
        "lead_note": front.lead_note,
        "open_tickets": [t.brief() for t in front.tickets],
        "history": [r.model_dump() for r in front.history[-3:]],
        "machine": rt.machine_commands(),
        "rules": [
            *CRITIC_RULES[:-1],
            *_LEAD_RULE[: bool(front.lead_note)],
            CRITIC_RULES[-1],
        ],
        "result": {
            "findings": [
                {
                    "id": "...",
                    "severity": "major|medium|minor",
                    "title": "...",
                    "evidence": "...",
                    "owner": "...",
                }
            ],
            "tickets": [
                {
                    "id": "...",
                    "severity": "...",
                    "title": "...",
                    "owner": "...",
                    "files": ["..."],
                    "gate": "item id",
                }
            ],
            "counts": {"majors": 0, "mediums": 0, "minors": 0},
            "approve": False,
            "tickets_review": [{"ticket_id": "...", "outcome": "confirmed_fixed"}],
            "gate_changes": [
                {"kind": "add_items", "items": ["..."], "reason": "..."},
                {
                    "kind": "recalibrate",
                    "items": ["..."],
                    "reason": "...",
                    "targets": {"item id": "<=N"},
                    "removes": [],
                    "proof": {"reason": "noise", "measurement": "...", "date": "YYYY-MM-DD"},
                },
            ],
            "summary": "...",
        },
    }


def prep_brief(plan: PlanSpec, spec: FrontSpec, busy: Mapping[str, list[str]]) -> dict[str, Any]:
    return {
        "role": "prep",
        "front": spec.id,
        "goal": spec.goal or spec.label,
        "wave": spec.wave,
        "files": {o: list(g) for o, g in spec.owners.items()},
        "gate": _gate(spec, f"{spec.id}.prep"),
        "in_flight": dict(busy),
        "machine": rt.machine_commands(),
        "rules": list(PREP_RULES),
        "result": {
            "tickets": [
                {
                    "id": "...",
                    "severity": "major",
                    "title": "...",
                    "owner": "...",
                    "gate": "item id",
                }
            ],
            "handoff": "at most 15 lines for the first round",
            "baseline": "the SUMMARY line of your --full run",
        },
    }


def words(brief: Mapping[str, Any], report_path: str, workspace: str, skill: str = "") -> str:
    """The prompt around a brief. `skill`: the name of the role's skill when its CLI has it
    mounted (`skills.py`), which then carries the rules instead of the prompt."""
    role = brief["role"]
    if role == "builder":
        head = (
            f"You are a fresh builder on front {brief['front']}, round {brief['round']} of "
            f"at most {brief['rounds_max']}. Fix your tickets, most severe first, within "
            "your files."
        )
    elif role == "critic":
        head = (
            f"You are a fresh adversarial critic of front {brief['front']}, round "
            f"{brief['round']}. Try to refute that it meets its targets."
        )
    elif role == "lead":
        head = (
            f"You are a fresh lead of front {brief['front']}: block {brief['block_ended']} "
            "ended; decide the next block from its verdicts, notes and tickets."
        )
    else:
        head = f"You are a one-pass prep agent for front {brief['front']} (wave {brief['wave']})."
    return (
        f"{head}\nGoal: {brief['goal']}\nWork in {workspace}.\n"
        + (
            f"Rules: follow the {skill} skill, your role's rules (mounted for you: load it "
            "first).\n"
            if skill
            else "Rules:\n" + "".join(f"- {r}\n" for r in brief["rules"])
        )
        + "Your brief (also in $FLAMECHASE_BRIEF):\n"
        + json.dumps(
            {k: v for k, v in brief.items() if k not in ("rules", "result")},
            indent=1,
            ensure_ascii=False,
        )
        + f"\nWhen done, write your result as JSON to {report_path}, shaped like:\n"
        + json.dumps(brief["result"], ensure_ascii=False)
        + "\n"
    )


def planner_prompt(
    objective: str,
    fronts_max: int,
    report_path: str,
    workspace: str,
    errors: tuple[str, ...],
    skill: str = "",
) -> str:
    """The planner's prompt; `skill`: its skill when the CLI has it mounted (the planner's
    rules), which the prompt then names instead of listing them."""
    again = "".join(f"\n- {e}" for e in errors)
    rules = (
        f"Rules: follow the {skill} skill, the planner's rules (mounted for you: load it first).\n"
        if skill
        else "Rules:\n" + "".join(f"- {r}\n" for r in PLANNER_RULES)
    )
    return (
        f"Plan this work as parallel fronts (at most {fronts_max}), in {workspace}.\n"
        f"Objective: {objective}\n" + rules + f"Write the plan as JSON to {report_path}: "
        '{"fronts": [{"id": "P1", "goal": "...", "wave": 1, "depends_on": [], "weight": 1, '
        '"gate": "python3 gates/p1.py", "freeze": ["gates/p1.py"], "targets": {"T.x": "<=5"}, '
        '"owners": {"core": ["src/core/**"]}}], "blocks": 3, "rounds_per_block": 3, '
        '"max_tickets": 3}' + (f"\nEarlier plans were refused:{again}" if errors else "") + "\n"
    )
