"""Tickets: most severe first, at most a few per builder, their own files' owner, and a
ticket that survives a round counts its rounds."""

from __future__ import annotations

from flamechase.flows.parrallello.gates import GateResult
from flamechase.flows.parrallello.tickets import Ticket, assign, next_tickets

OWNERS = {"core": ("src/core/**",), "ui": ("src/ui/**",)}


def t(
    tid: str,
    sev: str = "major",
    owner: str | None = None,
    files: tuple[str, ...] = (),
    rounds: int = 0,
) -> Ticket:
    return Ticket(
        id=tid,
        severity=sev,
        source="critic",
        title=tid,  # type: ignore[arg-type]
        owner=owner,
        files=files,
        rounds_open=rounds,
    )


def test_each_builder_gets_its_own_most_severe_first_within_its_cap() -> None:
    got = assign(
        [
            t("a", "minor", "core"),
            t("b", "major", "core"),
            t("c", "medium", "core"),
            t("d", "major", "core"),
        ],
        OWNERS,
        per_builder=3,
    )
    assert [x.id for x in got["core"]] == ["b", "d", "c"]
    assert "ui" not in got


def test_tickets_go_to_the_owner_of_their_files_else_to_the_least_busy() -> None:
    got = assign(
        [t("a", files=("src/ui/x.js",)), t("b"), t("c", owner="core")], OWNERS, per_builder=3
    )
    assert [x.id for x in got["ui"]] == ["a"]  # its file is ui's
    assert [x.id for x in got["core"]] == ["b", "c"]  # b: nobody's, core had fewer


def test_a_paced_round_takes_fewer_tickets_in_all() -> None:
    many = [t(f"k{i}", owner="core" if i % 2 else "ui") for i in range(8)]
    assert sum(len(v) for v in assign(many, OWNERS, per_builder=3).values()) == 6
    assert sum(len(v) for v in assign(many, OWNERS, per_builder=3, total=4).values()) == 4


def test_open_tickets_add_failing_gate_items_and_count_rounds_open() -> None:
    gate = GateResult(
        passed=False,
        n=1,
        m=3,
        failing=(
            {"id": "T.x", "value": 9, "target": "<=5", "pass": False},
            {"id": "T.y", "value": 0, "target": ">=1", "pass": False},
        ),
    )
    first = next_tickets((), [t("c1", "medium")], gate)
    assert [x.id for x in first] == ["G-T.x", "G-T.y", "c1"]
    covered = Ticket(id="c2", severity="major", source="critic", title="y", gate="T.y")
    second = next_tickets(first, [t("c1", "medium"), covered], gate)
    assert {x.id: x.rounds_open for x in second} == {"G-T.x": 1, "c2": 0, "c1": 1}


def test_a_gate_that_fails_closed_becomes_one_ticket() -> None:
    gate = GateResult(passed=False, reason="no-result-line", detail="no RESULT_JSON line")
    assert [x.id for x in next_tickets((), [], gate)] == ["G-gate"]
