"""The words of parallel_flame_chase:git_pr: the coordinator's plan, and each lane turn."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flamechase.flows.git_pr import programs
from flamechase.flows.git_pr.model import GitState
from flamechase.flows.parallel_flame_chase.prompts import turn_context
from flamechase.reports import report_schema

LEDGER_SHOWN = 5


def _j(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def plan_prompt(
    *,
    objective: str,
    lanes: Sequence[str],
    previous_errors: Sequence[str],
    workspace_map: Mapping[str, Any],
    report_path: Path,
    metric: str,
    direction: str,
    skill: str = "",
) -> str:
    """The coordinator's planning turn; `skill`: the variant's skill when its CLI has it
    mounted (the lane protocol the plan is for), which the prompt then refers to."""
    retry = (
        "\nEarlier planning sessions failed: " + "; ".join(previous_errors) + "\n"
        if previous_errors
        else ""
    )
    follow = (
        f"The lanes follow the {skill} skill, the lane protocol of this variant (mounted for "
        "you too: load it first to know what each lane may do). "
        if skill
        else ""
    )
    return (
        "You are the planning coordinator of a Git/PR parallel flame chase. Read the "
        "repository first. Plan only: no edits, no remote actions, no implementation.\n"
        f"Split the objective into exactly {len(lanes)} materially different experiment lanes "
        f"({', '.join(lanes)}). Every lane works in its own git clone and has equal rights: it "
        "pushes branches and opens pull requests; the runtime measures each candidate itself "
        f"({metric}, {direction}) and merges the best one that beats main. No lane is "
        f"privileged. {follow}Missions must be falsifiable and give complementary information, not "
        "cosmetic variants. This is the only coordinator turn: lanes coordinate through "
        f"reports.\n{retry}\nObjective:\n{objective}\n\nWorkspace map:\n{_j(workspace_map)}"
        f"\n\nWrite the plan as JSON to {report_path}:\n"
        + _j(
            {
                "lanes": [
                    {
                        "lane": name,
                        "mission": {
                            "title": "…",
                            "objective": "…",
                            "success_criteria": ["…"],
                            "kind": "research|implementation|validation|integration",
                            "approach_class": "…",
                        },
                    }
                    for name in lanes
                ]
            }
        )
        + "\nExactly one entry per lane. Optional mission fields: change_scale, "
        "information_question, dependencies.\n"
    )


def _fmt(value: float | None) -> str:
    return "unmeasured" if value is None else f"{value:g}"


def protocol(state: GitState, lane: str) -> str:
    p, pr = state.params, programs.pr_cli()
    allowed = ", ".join(state.allowed) if state.allowed else "any path except .git"
    return "\n".join(
        [
            f"How work lands (Git and pull requests); `fc-pr` below stands for `{pr}` (this "
            "installation's `flamechase pr`):",
            f"1. Start from the latest main: `git fetch origin && git checkout -B {lane}/NAME "
            "origin/main` (NAME: short, new for each idea).",
            "2. Work and test in this clone; commit (the clone has its own git identity).",
            f"3. `git push origin {lane}/NAME`. You may push only your own branches ({lane}/...);"
            " main takes only the runtime's merges. A branch you opened a PR from is kept: "
            "deleting it is refused.",
            "4. `fc-pr open --title TITLE --hypothesis WHAT_YOU_EXPECT` on that branch:"
            " a draft PR.",
            "5. `fc-pr ready` on the branch (or `fc-pr ready PR000123`) when it should be judged: "
            f"the runtime checks out exactly your pushed head and runs `{p.evaluator}` itself "
            f"({p.metric}, {p.direction}); its receipt, not your claim, decides. The branch is "
            "then frozen (pushes moving or deleting it are refused): continue on a new branch. "
            "One ready PR per lane: a newer one supersedes the older.",
            "6. `fc-pr list` and `fc-pr show PR000123` show PRs, receipts and main's score.",
            "Pushes and PR requests are carried out by the runtime when your turn ends; what "
            "became of them (refusals with reasons, measurements, merges) comes back as system "
            "reports in your next turns.",
            f"Merging: the best ready PR whose measured {p.metric} strictly beats main's is "
            "merged. If your branch does not contain the current main, the runtime merges it "
            "with main and measures that merge, whatever your head alone scored, and merges "
            "it if the merge beats main (conflicts reject the PR: rebase on origin/main "
            f"and open a new one). PRs may change: {allowed}.",
            frozen_line(state),
            "Never edit the original source, another lane's clone or the central repository.",
        ]
    )


def frozen_line(state: GitState) -> str:
    files = ", ".join(sorted(state.frozen or ())) or "none (the command names no file of the tree)"
    return (
        f"The evaluator is frozen: its files ({files}) were frozen from the baseline at the "
        "start, and every PR is measured with them as they were. A PR that changes, deletes "
        "or replaces one of them is tampered: never measured, never merged."
    )


def state_lines(state: GitState, lane: str) -> str:
    mine = [pr.summary() for pr in state.prs.values() if pr.lane == lane]
    keep = ("id", "branch", "status", "head", "score", "reason", "merge")
    rows = [{k: row.get(k) for k in keep} for row in mine[-10:]]
    merges = [e.model_dump(mode="json") for e in state.ledger[-LEDGER_SHOWN:]]
    return (
        f"Main now: {str(state.main)[:12]}, {state.params.metric} = "
        f"{_fmt(state.main_score)} ({len(state.ledger)} merge(s) so far).\n"
        f"Recent merges:\n{_j(merges)}\nYour lane's PRs:\n{_j(rows)}"
    )


def _turn_lines(
    state: GitState,
    lane: str,
    objective: str,
    mission: Mapping[str, Any] | None,
    workspace_map: Mapping[str, Any],
    inbox: Sequence[Mapping[str, Any]],
    inbox_path: Path,
) -> list[str]:
    """What a lane turn's prompt says of the run, the lane and its inbox, with or without
    the skill: parallel_flame_chase's turn context between this run's state and the reports."""
    ln = state.book.get(lane)
    return [
        state_lines(state, lane),
        "",
        *turn_context(objective, mission, ln.consecutive_failures, ln.last_error, workspace_map),
        "",
        f"Reports not yet acknowledged by this lane, from other lanes and from the runtime "
        f"(also in {inbox_path}):\n{_j(list(inbox))}",
    ]


# long: the words of a lane's prompt, kept together as the agent reads them.
def lane_prompt(
    state: GitState,
    *,
    lane: str,
    role: str,
    partner: str,
    turn: int,
    workspace: Path,
    objective: str,
    mission: Mapping[str, Any] | None,
    inbox: Sequence[Mapping[str, Any]],
    inbox_path: Path,
    checkpoint_path: Path | None,
    checkpoint_identity: Mapping[str, Any],
    workspace_map: Mapping[str, Any],
    report_path: Path,
    skill: str = "",
) -> str:
    if skill:
        return _lane_facts(
            state,
            skill=skill,
            lane=lane,
            role=role,
            partner=partner,
            turn=turn,
            workspace=workspace,
            objective=objective,
            mission=mission,
            inbox=inbox,
            inbox_path=inbox_path,
            checkpoint_path=checkpoint_path,
            checkpoint_identity=checkpoint_identity,
            workspace_map=workspace_map,
            report_path=report_path,
        )
    return "\n".join(
        [
            f"You are {role} of {lane}, taking turn {turn} of {lane} in a Git/PR parallel flame "
            f"chase. This is a fresh session; {partner} takes the next turn. Leave durable work "
            "in git and evidence in your report, not conversational memory.",
            f"Your place is your own git clone: {workspace}. Read it and TASK.md first.",
            "",
            protocol(state, lane),
            "",
            "Do substantive work now; test claims in proportion; no remote release, deployment, "
            "purchase or messaging; do not invent success. Status: progress = work landed; "
            "no_result = a falsifiable direction was exhausted; blocked = a concrete blocker (this "
            "holds the lane). Your PRs are your deliverables: name them in your report.",
            "",
            *_turn_lines(state, lane, objective, mission, workspace_map, inbox, inbox_path),
            "",
            f'You may write a checkpoint to {checkpoint_path} as {{"identity": '
            f'{_j(dict(checkpoint_identity))} + "phase": "terminal", "report": <your report>}};'
            " it is used only if your session dies before the report is written.",
            "",
            f"Finish by writing your turn report as JSON to {report_path}, matching this "
            f"schema:\n{json.dumps(report_schema(), separators=(',', ':'))}",
        ]
    )


def facts(state: GitState, lane: str) -> str:
    """What a lane must know of this run to follow the skill's pull-request steps."""
    p, pr = state.params, programs.pr_cli()
    allowed = ", ".join(state.allowed) if state.allowed else "any path except .git"
    return "\n".join(
        [
            f"`fc-pr` is `{pr}`; your branches are {lane}/NAME.",
            f"The evaluator the runtime runs on a ready PR: `{p.evaluator}` ({p.metric}, "
            f"{p.direction}). PRs may change: {allowed}.",
            frozen_line(state),
        ]
    )


# long: the same facts as lane_prompt, the protocol left to the mounted skill.
def _lane_facts(
    state: GitState,
    *,
    skill: str,
    lane: str,
    role: str,
    partner: str,
    turn: int,
    workspace: Path,
    objective: str,
    mission: Mapping[str, Any] | None,
    inbox: Sequence[Mapping[str, Any]],
    inbox_path: Path,
    checkpoint_path: Path | None,
    checkpoint_identity: Mapping[str, Any],
    workspace_map: Mapping[str, Any],
    report_path: Path,
) -> str:
    """A lane turn's prompt when its CLI has the `skill` mounted: this turn's facts; the
    protocol (actor, pull requests, report, checkpoint, resume) is the skill's."""
    return "\n".join(
        [
            f"You are {role} of {lane}, taking turn {turn} of {lane} in a Git/PR parallel flame "
            f"chase; {partner} takes the next turn.",
            f"Follow the {skill} skill, the lane protocol of pull requests (actor, pull "
            "requests, report, checkpoint, resume): load it first.",
            f"Your git clone: {workspace}.",
            "",
            facts(state, lane),
            "",
            *_turn_lines(state, lane, objective, mission, workspace_map, inbox, inbox_path),
            "",
            f"Checkpoint path: {checkpoint_path}; identity: {_j(dict(checkpoint_identity))}",
            "",
            f"Report path: {report_path}; schema:\n"
            f"{json.dumps(report_schema(), separators=(',', ':'))}",
        ]
    )
