"""Sentences for the events of flows that run fronts (parrallello): plans, gates, rounds,
verdicts, blocks, integration and anomalies, each with the figures a reader checks first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FRONT_KINDS", "bar", "narrate_front"]

FRONT_KINDS = frozenset(
    {
        "fronts_planned",
        "checkpoint_made",
        "front_prepped",
        "front_started",
        "round_started",
        "builder_checked",
        "gate_ran",
        "gate_refrozen",
        "verdict_recorded",
        "block_ended",
        "front_ended",
        "front_integrated",
        "anomaly",
    }
)


def bar(fraction: Any, width: int = 10) -> str:
    """`[####------] 40%`."""
    try:
        f = min(1.0, max(0.0, float(fraction)))
    except (TypeError, ValueError):
        f = 0.0
    filled = round(f * width)
    return "[" + "#" * filled + "-" * (width - filled) + f"] {f:.0%}"


def _ids(items: Any, limit: int = 4) -> str:
    names = [str(i.get("id") if isinstance(i, Mapping) else i) for i in (items or [])]
    more = f" +{len(names) - limit}" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _progress(front: str, p: Mapping[str, Any]) -> str:
    return f" {front} {bar(p.get('progress'))} · all {bar(p.get('overall'))}"


# long: one sentence per front kind: a table, read as one
def narrate_front(kind: str, p: Mapping[str, Any]) -> tuple[str, str]:
    f = str(p.get("front") or "")
    if kind == "fronts_planned":
        fronts = p.get("fronts") or []
        waves = sorted({int(x.get("wave", 1)) for x in fronts if isinstance(x, Mapping)})
        return (
            f"Plan ({p.get('source')}): {len(fronts)} front(s) ({_ids(fronts, 8)}) in "
            f"{len(waves)} wave(s); at most {p.get('blocks')} block(s) of "
            f"{p.get('rounds_per_block')} round(s) each.",
            "plan",
        )
    if kind == "checkpoint_made":
        if p.get("tag"):
            return (
                f"Checkpoint of the source: tag {p.get('tag')} at "
                f"{str(p.get('commit'))[:12]} (never pushed).",
                "info",
            )
        return f"No checkpoint: {p.get('skipped') or p.get('error')}.", "warn"
    if kind == "front_prepped":
        if p.get("ok"):
            return (f"{f} is staged in one pass: {p.get('tickets')} first ticket(s).", "plan")
        return f"{f}: staging failed ({p.get('error')}); it starts cold.", "warn"
    if kind == "front_started":
        return (
            f"{f} opens (wave {p.get('wave')}): its gate frozen "
            f"({len(p.get('frozen') or {})} file(s)), baseline {p.get('baseline')}, "
            f"{p.get('tickets')} ticket(s).",
            "run",
        )
    if kind == "round_started":
        who = p.get("builders") or {}
        work = "; ".join(f"{o}: {_ids(t)}" for o, t in who.items()) or "no tickets: review only"
        paced = f", paced (ceiling {p.get('ceiling')})" if p.get("paced") else ""
        return (
            f"{f} round {p.get('round')} (block {p.get('block')}, "
            f"{p.get('in_block')} of the block){paced}: {work}.",
            "turn",
        )
    if kind == "builder_checked":
        text = f"{f}.{p.get('owner')} round {p.get('round')}: {p.get('accepted')} file(s) taken"
        if p.get("frozen"):
            return (
                text + f"; it edited the frozen gate ({_ids(p.get('frozen'))}): the "
                "round's work is refused.",
                "fail",
            )
        if p.get("outside"):
            return (
                text + f"; edits outside its files reverted ({_ids(p.get('outside'))}), "
                f"ticket(s) failed: {_ids(p.get('failed_tickets')) or 'none'}.",
                "fail",
            )
        return text + ".", "info"
    if kind == "gate_ran":
        word = "PASS" if p.get("passed") else "FAIL"
        why = f" — fails closed: {p.get('reason')} ({p.get('detail')})" if p.get("reason") else ""
        failing = f"; failing {_ids(p.get('failing'))}" if p.get("failing") else ""
        return (
            f"{f} gate --full ({p.get('stage')}, run by the runtime): SUMMARY "
            f"{p.get('n')}/{p.get('m')} {word}{why}{failing}.",
            "info" if p.get("passed") else "warn",
        )
    return _rest(kind, f, p)


def _rest(kind: str, f: str, p: Mapping[str, Any]) -> tuple[str, str]:
    if kind == "gate_refrozen":
        why = "; ".join(
            f"{c.get('kind')}: {c.get('reason')}"
            for c in p.get("changes") or []
            if isinstance(c, Mapping)
        )
        return f"{f} gate changed in review and frozen again ({why}).", "plan"
    if kind == "verdict_recorded":
        word = "APPROVED" if p.get("approved") else "not approved"
        why = f" ({'; '.join(p.get('reasons') or [])})" if p.get("reasons") else ""
        return (
            f"{f} round {p.get('round')}: {word}{why} — M{p.get('majors')} "
            f"m{p.get('mediums')} n{p.get('minors')}, gate {p.get('gate')}; next tickets: "
            f"{_ids(p.get('tickets')) or 'none'}." + _progress(f, p),
            "best" if p.get("approved") else "end",
        )
    if kind == "block_ended":
        paced = "; the next block is paced" if p.get("paced_next") else ""
        return (
            f"{f} block {p.get('block')} ends after {p.get('rounds')} round(s), "
            f"{float(p.get('share') or 0):.1%} of a budget{paced}.",
            "info",
        )
    if kind == "front_ended":
        left = p.get("open_tickets") or []
        tail = f"; open: {_ids(left)}" if left else ""
        return (
            f"{f} {str(p.get('status')).replace('_', ' ').upper()} after "
            f"{p.get('rounds')} round(s): {p.get('reason')}{tail}." + _progress(f, p),
            "best" if p.get("status") == "approved" else "fail",
        )
    if kind == "front_integrated":
        if p.get("error"):
            return f"{f} could not be integrated: {p.get('error')}.", "fail"
        commit = f", commit {str(p.get('commit'))[:12]}" if p.get("commit") else ""
        return f"{f} lands in the source: {p.get('files')} file(s){commit}.", "report"
    return (
        f"Anomaly {p.get('what')} in {f or 'the run'} (round {p.get('round')}): {p.get('detail')}.",
        "warn",
    )
