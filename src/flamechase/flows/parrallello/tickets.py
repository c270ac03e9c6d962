"""Tickets: what the next round's builders work on, who gets which, most severe first.

After each round the open tickets are the critic's (at most 8), one `G-<item>` ticket per
failing gate item no critic ticket already closes on, and the runtime's own (an edit outside a
builder's files, a touched gate). A ticket that survives a round keeps its id and counts
`rounds_open`; at two or more the builder is told to change method (the seed's "when an item
recurs, change method"). Minors are optional: a builder takes them only when it has room.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from flamechase.flow import FlowState
from flamechase.flows.parrallello.gates import GateResult
from flamechase.flows.parrallello.verdict import Finding, TicketIn
from flamechase.globs import any_match

__all__ = ["Ticket", "assign", "carried", "from_findings", "next_tickets", "rank"]

OPEN_CAP = 16  # open tickets kept per front (the most severe)
SEVERITY = {"major": 0, "medium": 1, "minor": 2}
Source = Literal["plan", "prep", "critic", "gate", "runtime", "lead"]


class Ticket(FlowState):
    id: str
    severity: Literal["major", "medium", "minor"]
    source: Source
    title: str
    detail: str = ""
    owner: str | None = None
    files: tuple[str, ...] = ()
    gate: str | None = None
    rounds_open: int = 0

    @property
    def required(self) -> bool:
        return self.severity != "minor"

    def brief(self) -> dict[str, object]:
        return {
            "id": self.id,
            "severity": self.severity,
            "title": self.title,
            "detail": self.detail,
            "files": list(self.files),
            "gate": self.gate,
            "rounds_open": self.rounds_open,
            "required": self.required,
        }


def rank(t: Ticket) -> tuple[int, int, str]:
    return (SEVERITY[t.severity], -t.rounds_open, t.id)


def carried(source: Source, given: Iterable[TicketIn]) -> list[Ticket]:
    return [
        Ticket(
            id=t.id,
            severity=t.severity,
            source=source,
            title=t.title,
            detail=t.detail,
            owner=t.owner,
            files=t.files,
            gate=t.gate,
        )
        for t in given
    ]


def from_findings(findings: Sequence[Finding]) -> list[Ticket]:
    """Tickets from majors and mediums, for a critic that listed findings but no tickets."""
    return [
        Ticket(
            id=f"F-{f.id}",
            severity=f.severity,
            source="critic",
            title=f.title,
            detail=f"{f.evidence}\nfix: {f.fix}".strip(),
            owner=f.owner,
            files=(f.file,) if f.file else (),
        )
        for f in findings
        if f.severity != "minor"
    ][:8]


def gate_tickets(gate: GateResult | None, covered: set[str]) -> list[Ticket]:
    if gate is None:
        return []
    if gate.reason is not None:
        return [
            Ticket(
                id="G-gate",
                severity="major",
                source="gate",
                title=f"the gate fails closed ({gate.reason})",
                detail=gate.detail + " — the gate script is frozen: fix what makes it "
                "fail without editing it",
            )
        ]
    out = []
    for item in gate.failing:
        item_id = str(item.get("id"))
        if item_id not in covered:
            out.append(
                Ticket(
                    id=f"G-{item_id}",
                    severity="major",
                    source="gate",
                    title=f"gate item {item_id} fails: value {item.get('value')!r}, "
                    f"target {item.get('target')!r}",
                    gate=item_id,
                )
            )
    return out


def next_tickets(
    previous: Sequence[Ticket], fresh: Sequence[Ticket], gate: GateResult | None
) -> tuple[Ticket, ...]:
    """The open tickets after a round: `fresh` (the critic's and the runtime's) and the failing
    gate items, with `rounds_open` carried from tickets of the same id."""
    before = {t.id: t for t in previous}
    covered = {t.gate for t in fresh if t.gate}
    out: dict[str, Ticket] = {}
    for t in [*fresh, *gate_tickets(gate, covered)]:
        if t.id in out:
            continue
        old = before.get(t.id)
        out[t.id] = t.replace(rounds_open=old.rounds_open + 1) if old else t
    return tuple(sorted(out.values(), key=rank)[:OPEN_CAP])


def owner_of(t: Ticket, owners: Mapping[str, Sequence[str]]) -> str | None:
    if t.owner in owners:
        return t.owner
    for name, globs in owners.items():
        if any(any_match(globs, f) for f in t.files):
            return name
    return None


def assign(
    tickets: Sequence[Ticket],
    owners: Mapping[str, Sequence[str]],
    per_builder: int,
    total: int | None = None,
) -> dict[str, tuple[Ticket, ...]]:
    """Each builder's tickets for a round: its own (by owner, then by files), the rest spread
    to whoever has fewest; at most `per_builder` each and `total` in all, most severe first."""
    got: dict[str, list[Ticket]] = {o: [] for o in owners}
    room = total if total is not None else per_builder * len(owners)
    for t in sorted(tickets, key=rank):
        if room <= 0:
            break
        who = owner_of(t, owners)
        if who is None:
            who = min(got, key=lambda o: (len(got[o]), list(owners).index(o)))
        if len(got[who]) >= per_builder:
            continue
        got[who].append(t)
        room -= 1
    return {o: tuple(ts) for o, ts in got.items() if ts}
