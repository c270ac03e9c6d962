"""What a flow may ask the runtime for besides turns: programs run in places (`Run`), empty
places, and requests an agent makes from inside its turn. Real processes, real files."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.helpers import actor, cli, events

FLOW = """
from pydantic import BaseModel, ConfigDict
from flamechase.flow import (Event, FinishRun, Flow, FlowParams, MakePlace, Run, RunSetup,
                             StartTurn, TurnContext, events)


class S(BaseModel):
    model_config = ConfigDict(frozen=True)
    places: dict[str, str] = {}
    asked: tuple[dict, ...] = ()
    turned: bool = False
    ran: dict[str, dict] = {}


class Asker(Flow[S]):
    name = "asker"
    summary = "one turn that asks for things, then the runtime does them"
    State = S

    def roles(self, params): return ["agent"]
    def start(self, setup): return S()

    def evolve(self, state, event):
        if isinstance(event, events.PlaceMade):
            return state.model_copy(update={"places": {**state.places, event.place: event.path}})
        if isinstance(event, events.TurnValid):
            return state.model_copy(update={"turned": True, "asked": tuple(event.requests)})
        if isinstance(event, events.Ran):
            return state.model_copy(update={"ran": {**state.ran, event.key: event.receipt}})
        return state

    def decide(self, state, now):
        if "scratch" not in state.places:
            return [MakePlace("scratch", how="empty")]
        if not state.turned:
            return [StartTurn(role="agent", lane=None, number=1, requests=True)]
        wanted = [Run(key=f"say-{n}", place="scratch", argv=("sh", "-c", r["say"]))
                  for n, r in enumerate(state.asked)]
        if all(w.key in state.ran for w in wanted):
            return [FinishRun("finished", json.dumps({k: [v["exit_code"], v["output"]]
                                                      for k, v in state.ran.items()}))]
        return [w for w in wanted if w.key not in state.ran]

    def prompt(self, state, ctx):
        return f"write requests; report to {ctx.report_path}"


import json
FLOW = Asker()
"""


def test_requests_from_a_turn_reach_the_flow_and_run_in_an_empty_place(
    tmp_path: Path, state_home: Path
) -> None:
    flow = tmp_path / "asker.py"
    flow.write_text(textwrap.dedent(FLOW))
    agent = actor(
        tmp_path,
        "agent.sh",
        """
        echo '{"say": "pwd; ls -A | wc -l; echo hi >&1"}' >> "$FLAMECHASE_REQUESTS"
        echo 'not json' >> "$FLAMECHASE_REQUESTS"
        echo '{"say": "exit 3"}' >> "$FLAMECHASE_REQUESTS"
        echo '{"status":"progress","summary":"asked"}' > "$FLAMECHASE_REPORT"
    """,
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text("not copied into an empty place\n")
    proc = cli(
        "exec",
        "-f",
        str(flow),
        "-a",
        f"exec:{agent}",
        "-p",
        "budget.turns=3,rest_seconds=0.05",
        "go",
        cwd=ws,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    valid = next(e for e in evs if e["kind"] == "turn_valid")
    assert valid["payload"]["requests"] == [
        {"say": "pwd; ls -A | wc -l; echo hi >&1"},
        {"say": "exit 3"},
    ]
    assert valid["payload"]["requests_refused"] == ["line 2: not JSON"]
    place = next(e for e in evs if e["kind"] == "place_made")["payload"]["path"]
    ran = {e["payload"]["key"]: e["payload"]["receipt"] for e in evs if e["kind"] == "ran"}
    assert ran["say-0"]["exit_code"] == 0 and ran["say-0"]["error"] is None
    assert ran["say-0"]["output"] == f"{place}\n0\nhi\n"  # the place is empty
    assert ran["say-1"]["exit_code"] == 3 and "exited with code 3" in ran["say-1"]["error"]
    final = json.loads(proc.stderr.split("finished: ", 1)[1].rsplit("; ", 1)[0])
    assert final == {"say-0": [0, f"{place}\n0\nhi\n"], "say-1": [3, ""]}
