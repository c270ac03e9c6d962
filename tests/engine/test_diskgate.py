"""budget.disk through the real CLI: a copy past it is refused with one line naming
budget.disk and `flamechase gc`, the turns that wait on it never start, and the turns on
places that exist go on; the run ends only when nothing else can happen."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.helpers import REPORT_OK, actor, cli, events, status

# A writer works on the user's tree (no copy); a reader works in a copy of it.
FLOW = """
from pydantic import BaseModel, ConfigDict
from flamechase.flow import FinishRun, Flow, MakePlace, StartTurn, events


class S(BaseModel):
    model_config = ConfigDict(frozen=True)
    places: tuple[str, ...] = ()
    done: dict[str, int] = {}


class TwoPlaces(Flow[S]):
    name = "two_places"
    summary = "a writer on the tree, a reader in a copy"
    State = S

    def roles(self, params): return ["writer", "reader"]
    def start(self, setup): return S()

    def evolve(self, state, event):
        if isinstance(event, events.PlaceMade):
            return state.model_copy(update={"places": (*state.places, event.place)})
        if isinstance(event, events.TurnValid):
            n = state.done.get(event.actor, 0) + 1
            return state.model_copy(update={"done": {**state.done, event.actor: n}})
        return state

    def decide(self, state, now):
        wrote, read = state.done.get("writer", 0), state.done.get("reader", 0)
        if wrote >= 3 and read >= 1:
            return [FinishRun("finished", "both done")]
        out = []
        if "copy" not in state.places:
            out.append(MakePlace("copy"))
        elif read < 1:
            out.append(StartTurn(role="reader", lane=None, number=1, place="copy"))
        if wrote < 3:
            out.append(StartTurn(role="writer", lane=None, number=wrote + 1))
        return out

    def prompt(self, state, ctx):
        return f"report to {ctx.report_path}"


FLOW = TwoPlaces()
"""


def _turns(ws: Path) -> list[str]:
    """The role of every valid turn, in order."""
    return [e["actor"] for e in events(ws) if e["kind"] == "turn_valid"]


def _run(tmp_path: Path, ws: Path, *params: str) -> tuple[int, str]:
    flow = tmp_path / "two_places.py"
    flow.write_text(textwrap.dedent(FLOW))
    agent = actor(tmp_path, "agent.sh", REPORT_OK)
    proc = cli(
        "exec", "-f", str(flow), "-a", f"exec:{agent}", "-a", f"exec:{agent}",
        "-p", ",".join(("rest_seconds=0.05", "budget.duration=60s", *params)), "go",
        cwd=ws, timeout=120,
    )  # fmt: skip
    return proc.returncode, proc.stderr


def test_a_copy_past_budget_disk_is_refused_and_turns_on_existing_places_go_on(
    tmp_path: Path, source_tree: Path
) -> None:
    code, err = _run(tmp_path, source_tree, "budget.disk=1")
    assert code == 0, err
    # The writer's turns went on; the reader's copy was refused, so its turn never started.
    assert _turns(source_tree) == ["writer"] * 3
    st = status(source_tree)
    assert st["status"] == "finished"
    (said,) = [n for n in st["notices"] if "budget.disk" in n]  # said once
    for line in (said, st["ended"]):
        assert "\n" not in line
        assert line.startswith("budget.disk is spent: ") and "budget.disk=1 B" in line
        assert "(waiting: copy)" in line and "flamechase gc" in line
    kinds = [e["kind"] for e in events(source_tree)]
    assert "place_made" not in kinds and "budget_spent" not in kinds


def test_with_room_under_budget_disk_the_copy_is_made(tmp_path: Path, source_tree: Path) -> None:
    code, err = _run(tmp_path, source_tree, "budget.disk=1G")
    assert code == 0, err
    assert sorted(_turns(source_tree)) == ["reader"] + ["writer"] * 3
    assert status(source_tree)["ended"].startswith("both done")


# A reader in a copy, then, once it is dropped, another reader in a new copy of the tree.
RELAY = """
from pydantic import BaseModel, ConfigDict
from flamechase.flow import DropPlace, FinishRun, Flow, MakePlace, StartTurn, events


class S(BaseModel):
    model_config = ConfigDict(frozen=True)
    places: tuple[str, ...] = ()
    done: int = 0


class Relay(Flow[S]):
    name = "relay"
    summary = "two readers, each in its own copy, one after the other"
    State = S

    def roles(self, params): return ["reader"]
    def start(self, setup): return S()

    def evolve(self, state, event):
        if isinstance(event, events.PlaceMade):
            return state.model_copy(update={"places": (*state.places, event.place)})
        if isinstance(event, events.TurnValid):
            return state.model_copy(update={"done": state.done + 1})
        return state

    def decide(self, state, now):
        if state.done == 0:
            if "first" not in state.places:
                return [MakePlace("first")]
            return [StartTurn(role="reader", lane=None, number=1, place="first")]
        if state.done == 1:
            if "second" not in state.places:
                return [DropPlace("first"), MakePlace("second")]
            return [StartTurn(role="reader", lane=None, number=2, place="second")]
        return [FinishRun("finished", "both read")]

    def prompt(self, state, ctx):
        return f"report to {ctx.report_path}"


FLOW = Relay()
"""


def test_a_dropped_copy_brought_back_is_made_under_budget_disk(
    tmp_path: Path, source_tree: Path
) -> None:
    """The second copy is the first one kept and brought back: it grows nothing, so a
    budget.disk that one copy fills does not refuse it."""
    (source_tree / "big.bin").write_bytes(b"x" * 3_000_000)
    flow = tmp_path / "relay.py"
    flow.write_text(textwrap.dedent(RELAY))
    agent = actor(tmp_path, "agent.sh", REPORT_OK)
    proc = cli(
        "exec", "-f", str(flow), "-a", f"exec:{agent}",
        "-p", "rest_seconds=0.05,budget.duration=60s,budget.disk=2M", "go",
        cwd=source_tree, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _turns(source_tree) == ["reader", "reader"]
    assert status(source_tree)["ended"].startswith("both read")
