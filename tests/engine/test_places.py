"""A dropped place: its copy kept for the next copy (workspace/reuse), and the flow told at
once, whether or not anything else is under way."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.helpers import REPORT_OK, actor, cli, events, status

# One reader in a copy; the run ends when the flow has seen its copy dropped.
FLOW = """
from pydantic import BaseModel, ConfigDict
from flamechase.flow import DropPlace, FinishRun, Flow, MakePlace, StartTurn, events


class S(BaseModel):
    model_config = ConfigDict(frozen=True)
    places: tuple[str, ...] = ()
    read: bool = False
    dropped: bool = False


class Once(Flow[S]):
    name = "once_in_a_copy"
    summary = "a reader in a copy, the copy dropped after"
    State = S

    def roles(self, params): return ["reader"]
    def start(self, setup): return S()

    def evolve(self, state, event):
        if isinstance(event, events.PlaceMade):
            return state.model_copy(update={"places": (*state.places, event.place)})
        if isinstance(event, events.PlaceDropped):
            return state.model_copy(update={"dropped": True})
        if isinstance(event, events.TurnValid):
            return state.model_copy(update={"read": True})
        return state

    def decide(self, state, now):
        if state.dropped:
            return [FinishRun("finished", "read, and the copy is gone")]
        if state.read:
            return [DropPlace("copy")]
        if "copy" not in state.places:
            return [MakePlace("copy")]
        return [StartTurn(role="reader", lane=None, number=1, place="copy")]

    def prompt(self, state, ctx):
        return f"report to {ctx.report_path}"


FLOW = Once()
"""


def test_a_flow_hears_its_copy_dropped_with_nothing_else_under_way(
    tmp_path: Path, source_tree: Path
) -> None:
    flow = tmp_path / "once.py"
    flow.write_text(textwrap.dedent(FLOW))
    agent = actor(tmp_path, "agent.sh", REPORT_OK)
    proc = cli(
        "exec", "-f", str(flow), "-a", f"exec:{agent}",
        "-p", "rest_seconds=0.05,budget.duration=30s", "go",
        cwd=source_tree, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # Ended by the flow, not by budget.duration: the drop woke the loop.
    assert status(source_tree)["ended"].startswith("read, and the copy is gone")
    assert [e["kind"] for e in events(source_tree)].count("place_dropped") == 1
