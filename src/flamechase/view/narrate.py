"""One sentence per event: who took a turn, and who handed what to whom.

A hand-off is one of: words (a report's summary), a report, an artifact (a frozen, hashed
file package), or the lane's working tree, which the partner actor takes next: "the tree" in
a lane that writes the source (lane 1), "the copy" in a lane on a private copy (lanes 2..N).
Sentences are built from the event and the fold *after* it was applied, so they can name a
report's source lane and artifacts and a lane's partner actor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flamechase.view.narrate_fronts import FRONT_KINDS, narrate_front
from flamechase.view.state import RunFold

__all__ = ["TAGS", "narrate"]

# What a sentence is about; the page styles and filters by it, `trace` draws hand-offs.
TAGS = ("run", "turn", "end", "fail", "report", "receive", "plan", "best", "warn", "info")

_SUMMARY = 240


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _clip(text: Any, limit: int = _SUMMARY) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _and(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _money(v: Any) -> str:
    try:
        return f"${float(v):.4f}"
    except (TypeError, ValueError):
        return "$0"


def _secs(v: Any) -> str:
    try:
        return f"{float(v):.1f} s"
    except (TypeError, ValueError):
        return "? s"


# long: one sentence per event kind: a table, read as one.
def narrate(ev: Mapping[str, Any], fold: RunFold) -> tuple[str, str]:
    """(sentence, tag) for `ev`, already applied to `fold`."""
    kind = str(ev.get("kind", ""))
    lane = str(ev.get("lane") or "")
    actor = str(ev.get("actor") or "")
    p: Mapping[str, Any] = ev.get("payload") or {}
    snap = fold.lanes.get(lane)
    if not lane and kind in _SOLO:
        return _solo(kind, actor, p)
    # The frequent kinds first: a long run has thousands of each.
    if kind == "turn_started":
        return _turn_started(lane, actor, p, fold), "receive" if p.get("delivered") else "turn"
    if kind == "turn_valid":
        partner = snap.partner(actor) if snap else None
        tree = f"; hands {partner} {_tree(lane, fold)}" if partner and partner != actor else ""
        said = f": “{_clip(p.get('summary'))}”" if p.get("summary") else ""
        return (
            f"{actor} — turn {p.get('turn')} of {lane} ends "
            f"{p.get('report_status') or 'valid'} ({_secs(p.get('duration'))}, "
            f"{_money(p.get('cost_usd'))}{_on(p)}){said}{tree}.",
            "end",
        )
    if kind == "turn_failed":
        partner = snap.partner(actor) if snap else None
        nxt = f"; {partner} takes {_tree(lane, fold)} next" if partner and partner != actor else ""
        return (
            f"{actor} — turn {p.get('turn')} of {lane} FAILED "
            f"({_secs(p.get('duration'))}{_on(p)}): {_clip(p.get('error'), 200)}{nxt}.",
            "fail",
        )
    if kind == "report_published":
        return _published(lane, actor, p, fold)
    if kind in FRONT_KINDS:
        return narrate_front(kind, p)
    if kind == "run_created":
        lanes = [str(x) for x in p.get("lanes") or fold.order]
        limits = ", ".join(f"{k} {v:g}" for k, v in fold.limits.items() if v is not None)
        return (
            f"Run created: {p.get('flow') or fold.flow} with "
            f"{_plural(len(lanes), 'lane')} ({', '.join(lanes)})"
            + (f"; budget {limits}" if limits else "")
            + ".",
            "run",
        )
    if kind == "place_made":
        return f"{lane or p.get('place')} gets its own private copy of the source tree.", "info"
    if kind == "planning_started":
        return (
            f"{actor or 'Planning'} starts planning (revision {p.get('revision', 1)}) "
            "in a fresh session on a copy of the tree.",
            "turn",
        )
    if kind == "plan_attempt":
        err = f": {_clip(p.get('error'), 160)}" if p.get("error") else ""
        return (
            f"{actor or 'Planning'}'s planning session {p.get('attempt')} ends "
            f"{p.get('status')} ({_secs(p.get('duration'))}, {_money(p.get('cost_usd'))})"
            f"{err}.",
            "fail" if p.get("status") != "valid" else "end",
        )
    if kind == "planned":
        plan = p.get("plan") or {}
        entries = (plan.get("lanes") or ()) if isinstance(plan, Mapping) else ()
        missions = []
        for entry in entries:
            title = (entry.get("mission") or {}).get("title")
            missions.append(f"{entry.get('lane')} “{_clip(title, 60)}”")
        who = _and(missions) if missions else "every lane"
        return (
            f"{actor or 'Planning'} hands each lane its mission as words: {who}; then leaves.",
            "plan",
        )
    if kind == "objective_revised":
        return "The objective changed (TASK.md was revised); the lanes go on toward it.", "plan"
    if kind == "objective_replanned":
        return f"The objective changed: re-planned (revision {p.get('revision')}).", "plan"
    if kind == "run_running":
        return f"Lanes start: {_and([str(x) for x in p.get('lanes') or fold.order])}.", "run"
    if kind == "run_resumed":
        changed = p.get("changed_agents") or {}
        extra = f"; new agents for {_and(sorted(changed))}" if changed else ""
        return f"Run resumed (session {p.get('session')}){extra}.", "run"
    if kind == "notice":
        return f"Notice: {_clip(p.get('message'), 400)}", "warn"
    if kind == "turn_interrupted":
        return (
            f"{actor} — turn {p.get('turn')} of {lane} was cut "
            f"({_clip(p.get('reason'), 160)}); the same actor takes it again.",
            "fail",
        )
    if kind == "lane_paused":
        return (
            f"{lane} pauses until {p.get('until')}: {_clip(p.get('reason'), 160)} "
            f"(a usage window closed for {actor}).",
            "warn",
        )
    if kind == "lane_held":
        return f"{lane} is HELD: {_clip(p.get('reason'), 200)}.", "fail"
    if kind == "lane_released":
        return f"{lane} goes on: {_clip(p.get('reason'), 200)}.", "plan"
    if kind == "measured":
        receipt = p.get("receipt") or {}
        value, error = receipt.get("value"), receipt.get("error")
        got = f"{value:g}" if isinstance(value, int | float) else "no value"
        return (
            f"The runtime measures {p.get('key')}: {got}"
            + (f" ({_clip(error, 160)})" if error else "")
            + ".",
            "info",
        )
    if kind == "leaderboard_declared":
        return (
            f"Candidates are ranked by {p.get('metric')} ({p.get('direction')}), "
            f"measured by the runtime with `{_clip(p.get('command'), 120)}`.",
            "info",
        )
    if kind == "candidate_submitted":
        measured = p.get("measured")
        how = (
            "verified by the runtime"
            if p.get("verified")
            else f"not verified: {_clip(p.get('unverified_reason'), 120)}"
        )
        got = f", measured {measured:g}" if isinstance(measured, int | float) else ""
        return (
            f"{lane} submits a candidate: {p.get('metric')} = {p.get('claimed')}{got} ({how}).",
            "info",
        )
    if kind == "candidate_best_updated":
        return (
            f"New best: {p.get('metric')} = {p.get('value')} from {lane} "
            f"(report {p.get('report_id')}).",
            "best",
        )
    if kind == "stopping":
        n = int(p.get("under_way") or 0)
        if p.get("cut"):
            return f"Stop asked again: {_plural(n, 'turn')} under way are cut now.", "warn"
        return (
            f"Stop asked: {_plural(n, 'turn')} under way will finish and be recorded; "
            "no new turn starts.",
            "warn",
        )
    if kind == "budget_spent":
        return f"Budget {p.get('key')} is spent: no new turns start.", "warn"
    if kind in _GIT:
        return _git(kind, lane, p)
    if kind in ("run_finished", "run_stopped", "run_failed", "run_held"):
        return (
            f"Run {kind[4:]}: {_clip(p.get('message'), 300)}. Spent {_money(fold.cost)} "
            f"over {_plural(fold.turns, 'turn')}.",
            "run",
        )
    return kind.replace("_", " ").capitalize() + ".", "info"


_GIT = frozenset(
    {
        "central_ready",
        "main_measured",
        "push_refused",
        "pr_opened",
        "pr_request_refused",
        "pr_ready",
        "pr_reviewing",
        "pr_merged",
        "pr_rejected",
        "main_published",
        "publication_held",
    }
)


def _num(v: Any) -> str:
    return f"{v:g}" if isinstance(v, int | float) else "no value"


# long: one sentence per pull-request kind: a table, read as one
def _git(kind: str, lane: str, p: Mapping[str, Any]) -> tuple[str, str]:
    """Pull requests, merges and publication (a flow whose lanes are git clones)."""
    pr, sha = p.get("pr"), str(p.get("commit") or p.get("merge") or "")[:12]
    if kind == "central_ready":
        return (
            f"The runtime seeds the central repository with the source's baseline "
            f"({p.get('files')} files, {sha}); each lane gets its own clone.",
            "info",
        )
    if kind == "main_measured":
        got = (
            _num(p.get("value"))
            if p.get("error") is None
            else f"no value ({_clip(p.get('error'), 160)})"
        )
        return f"The runtime measures main at {sha}: {got}; candidates must beat it.", "info"
    if kind == "push_refused":
        return (
            f"{lane}'s push to {p.get('ref')} is refused by the central repository's "
            f"hook: {_clip(p.get('reason'), 200)}.",
            "fail",
        )
    if kind == "pr_opened":
        return (
            f"{lane} opens {pr} from {p.get('branch')}: “{_clip(p.get('title'), 120)}”.",
            "report",
        )
    if kind == "pr_request_refused":
        return (
            f"The runtime refuses {lane}'s `pr {p.get('op')}`: {_clip(p.get('reason'), 200)}.",
            "fail",
        )
    if kind == "pr_ready":
        return (
            f"The runtime measures {pr} of {lane} in a clean checkout of {sha}: "
            f"{_num(p.get('value'))} (main: {_num(p.get('main_value'))}); {pr} is ready.",
            "info",
        )
    if kind == "pr_reviewing":
        return (
            f"{pr} of {lane} beats main ({_num(p.get('value'))} against "
            f"{_num(p.get('main_value'))}): the runtime merges it.",
            "plan",
        )
    if kind == "pr_merged":
        again = (
            ", measured again after merging it with a main that had moved"
            if p.get("remeasured")
            else ""
        )
        return (
            f"{pr} of {lane} is merged into main at {sha}: {_num(p.get('prior'))} → "
            f"{_num(p.get('value'))}{again}.",
            "best",
        )
    if kind == "pr_rejected":
        return f"{pr} of {lane} is rejected: {_clip(p.get('reason'), 240)}.", "fail"
    if kind == "main_published":
        committed = (
            f", committed as {str(p.get('source_commit'))[:12]}" if p.get("source_commit") else ""
        )
        return (
            f"Main ({sha}) is published to your tree: {p.get('paths')} path(s){committed}.",
            "report",
        )
    return (
        f"Publication of main ({sha}) to your tree is held: {_clip(p.get('reason'), 240)}; "
        "it is tried again.",
        "warn",
    )


_SOLO = frozenset({"turn_started", "turn_valid", "turn_failed", "turn_interrupted", "lane_paused"})


def _solo(kind: str, actor: str, p: Mapping[str, Any]) -> tuple[str, str]:
    """A turn outside lanes (a planning session)."""
    who = f"{actor or 'An actor'}'s session {p.get('turn')}"
    if kind == "turn_started":
        attempt = int(p.get("attempt") or 1)
        return (f"{who} opens, attempt {attempt} ({p.get('backend')}).", "turn")
    if kind == "turn_valid":
        return (
            f"{who} ends valid ({_secs(p.get('duration'))}, {_money(p.get('cost_usd'))}).",
            "end",
        )
    if kind == "turn_failed":
        return f"{who} FAILED: {_clip(p.get('error'), 200)}.", "fail"
    if kind == "lane_paused":
        return f"{who} pauses until {p.get('until')}: {_clip(p.get('reason'), 160)}.", "warn"
    return f"{who} was cut ({_clip(p.get('reason'), 160)}); it is taken again.", "fail"


def _on(p: Mapping[str, Any]) -> str:
    """Where a turn ran, when that was another machine (a Ray node)."""
    return f", on {_clip(p.get('host'), 80)}" if p.get("host") else ""


def _tree(lane: str, fold: RunFold) -> str:
    """What a lane's actors hand each other: the source tree, or the lane's private copy."""
    return "the copy" if lane in fold.copies else "the tree"


def _turn_started(lane: str, actor: str, p: Mapping[str, Any], fold: RunFold) -> str:
    attempt = int(p.get("attempt") or 1)
    again = f", attempt {attempt}" if attempt > 1 else ""
    head = (
        f"{actor} — turn {p.get('turn')} of {lane}{again}; a fresh session opens "
        f"({p.get('backend')})"
    )
    delivered = [str(r) for r in p.get("delivered") or ()]
    if not delivered:
        return head + "."
    by_lane: dict[str, list[str]] = {}
    artifacts = 0
    for rid in delivered:
        rep = fold.by_id.get(rid)
        src = rep.lane if rep else rid.split(".", 1)[0]
        by_lane.setdefault(src, []).append(rid)
        artifacts += rep.artifacts if rep else 0
    parts = [f"{src} ({', '.join(ids)})" for src, ids in by_lane.items()]
    carried = f" carrying {_plural(artifacts, 'artifact')}" if artifacts else ""
    return f"{head}; receives {_plural(len(delivered), 'report')}{carried} from {_and(parts)}."


def _published(lane: str, actor: str, p: Mapping[str, Any], fold: RunFold) -> tuple[str, str]:
    rid = p.get("report_id")
    if lane.startswith("system:"):
        return (
            f"The runtime reports to {lane.removeprefix('system:')}: "
            f"{str(p.get('report_kind')).replace('_', ' ')} [{rid}].",
            "info",
        )
    arts = list(p.get("artifacts") or ())
    what = f"a report ({p.get('report_status')})"
    if arts:
        names = ", ".join(str(a.get("path")) for a in arts[:3]) + (", …" if len(arts) > 3 else "")
        what += f" and {_plural(len(arts), 'artifact')} ({names})"
    others = [n for n in fold.order if n != lane]
    if fold.shares_reports and others:
        return f"{actor} hands {_and(others)} as words: {what} [{rid}].", "report"
    return f"{actor} files {what} [{rid}].", "report" if arts else "info"
