"""What an index, a flow or an agent writes reaches the terminal as text only: no control
sequence (OSC 52 clipboard writes, OSC 8 links, DCS, CSI, C1 forms), no BEL, backspace or CR
overwrite, no rich markup, in every command that prints it. Real runs, through the CLI."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.flows.loading_repos import index_yaml
from tests.helpers import FLAMECHASE, actor, cli

# Every kind of attack at once, between words that must still be shown.
H = (
    "\x1b]52;c;ZXZpbA==\x07"  # OSC 52: write the clipboard (BEL-terminated)
    "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\"  # OSC 8 hyperlink (ST)
    "\x1bP+q544e\x1b\\"  # DCS: a terminal query
    "\x1b[2J\x1b[6n\x1b"  # CSI: clear the screen, ask for the cursor; a bare ESC
    "\x9b31m\x9d0;title\x9c\x85"  # C1 CSI, C1 OSC with C1 ST, NEL
    "\x07ab\x08\x08\rOVER"  # BEL, backspace and CR overwrites
    " [link=https://evil.example/]m[/link] [/] [bold]"  # rich markup
)
SHOWN = "HOSTILE"
# Any byte a terminal acts on: C0 but newline and tab, DEL, C1 (ESC included).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _clean(proc: subprocess.CompletedProcess[str], *, shown: bool = True) -> str:
    out = proc.stdout + proc.stderr
    bad = CONTROL.search(out)
    assert bad is None, f"{bad.group()!r} reached the terminal: {out[max(0, bad.start() - 40) :]!r}"
    if shown:
        assert SHOWN in out, out  # the hostile text did reach this output
    return out


def _index(tmp: Path) -> Path:
    entry = {
        "name": "once",
        "version": f"1{H[:60]}",
        "description": f"{SHOWN} {H}",
        "repo": f"file://{tmp}/repo{H[:20]}",
        "ref": f"v1{H[:20]}",
        "commit": "0" * 40,
        "subdir": "once",
        "license": f"MIT{H[:30]}",
    }
    index = tmp / "index.json"
    index.write_text(json.dumps([entry]))
    return index


def test_an_index_shows_as_text_in_flows_list_and_show(tmp_path: Path) -> None:
    index = _index(tmp_path)
    listed = cli("flows", "list", "--index", str(index), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "[link=https://evil.example/]m[/link]" in _clean(listed)
    shown = cli("flows", "show", "once", "--index", str(index), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    _clean(shown)
    rows = cli("flows", "list", "--json", "--index", str(index), cwd=tmp_path)
    [row] = [r for r in json.loads(_clean(rows, shown=False)) if r["name"] == "once"]
    assert row["description"] == f"{SHOWN} {H}"  # JSON keeps the data, escaped
    # An index (YAML) whose error message carries the hostile text.
    bad = tmp_path / "bad.yaml"
    bad.write_text(index_yaml([{"name": f"x{H[:40]}", "version": "1"}]))
    _clean(cli("flows", "show", "nope", "--index", str(bad), cwd=tmp_path), shown=False)


HOSTILE_FLOW = f'''
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from flamechase.flow import (Command, Event, FinishRun, Flow, FlowParams, LaneDef,
                             PublishReport, Role, StartTurn, RunSetup, TurnContext, events)

H = {H!r}


class Params(FlowParams):
    depth: int = Field(default=1, ge=1, description="{SHOWN} param " + H)


class State(BaseModel):
    model_config = ConfigDict(frozen=True)
    started: int = 0
    ended: int = 0
    valid: int = 0
    unpublished: tuple[tuple[int, str, tuple[dict[str, object], ...]], ...] = ()


class Hostile(Flow[State]):
    name = "{SHOWN}" + H
    summary = "{SHOWN} summary " + H
    version = "1"
    Params = Params
    State = State
    resumable = False

    def roles(self, params: FlowParams) -> list[str]:
        return ["worker"]

    def describe_roles(self, params: FlowParams) -> list[Role]:
        return [Role("worker", "{SHOWN} role " + H)]

    def lanes(self, params: FlowParams) -> list[LaneDef]:
        return [LaneDef("lane-1", ("worker",))]

    def start_notices(self, params: FlowParams) -> list[str]:
        return ["{SHOWN} notice " + H]

    def start(self, setup: RunSetup) -> State:
        return State()

    def evolve(self, state: State, event: Event) -> State:
        if isinstance(event, events.TurnStarted):
            return state.model_copy(update={{"started": state.started + 1}})
        if isinstance(event, events.TurnValid):
            report = (event.turn, event.summary, tuple(event.artifacts))
            return state.model_copy(update={{
                "ended": state.ended + 1, "valid": state.valid + 1,
                "unpublished": (*state.unpublished, report),
            }})
        if isinstance(event, events.TurnEnded):
            return state.model_copy(update={{"ended": state.ended + 1}})
        if isinstance(event, events.ReportPublished):
            return state.model_copy(update={{"unpublished": state.unpublished[1:]}})
        return state

    def decide(self, state: State, now: float) -> Sequence[Command]:
        if state.unpublished:
            turn, summary, artifacts = state.unpublished[0]
            rid = f"lane-1.{{turn}}"
            record = {{"report_id": rid, "lane": "lane-1", "role": "worker", "status": "progress",
                      "summary": summary}}
            return [PublishReport("lane-1", rid, record, artifacts=artifacts)]
        if state.ended >= 3:
            return [FinishRun("finished", "{SHOWN} ended " + H)]
        if state.started > state.ended:
            return []
        return [StartTurn(role="worker", lane="lane-1", number=state.started + 1, artifacts=True)]

    def prompt(self, state: State, ctx: TurnContext) -> str:
        return "work"

    def describe(self, state: State) -> dict[str, object]:
        return {{"display": ["{SHOWN} display " + H], "lanes": {{"lane-1": {{"x": H}}}}}}


FLOW = Hostile()
'''

# Turn 1 delivers a file with a hostile name, turn 2 ends with a hostile summary, turn 3 fails
# saying hostile things.
AGENT = f"""
import json, os, sys
from pathlib import Path
H = {H!r}
turn = int(os.environ["FLAMECHASE_TURN"])
report = Path(os.environ["FLAMECHASE_REPORT"])
if turn == 1:
    name = "{SHOWN}" + H.replace("/", "_").replace("\\\\", "_") + ".md"
    (Path(os.environ["FLAMECHASE_ARTIFACTS"]) / name).write_text("notes")
    art = [{{"path": name, "description": "{SHOWN} file " + H}}]
    report.write_text(json.dumps({{"status": "deliverable_ready", "summary": "{SHOWN} " + H,
        "deliverable": {{"title": "{SHOWN} " + H[:100], "artifacts": art,
                        "integration_notes": "{SHOWN} " + H}}}}))
elif turn == 2:
    report.write_text(json.dumps({{"status": "progress", "summary": "{SHOWN} last " + H}}))
else:
    sys.stderr.write("{SHOWN} failure " + H + "\\n")
    sys.exit(1)
"""


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, list[str]]:
    """A workspace and the `exec` arguments of a run of the hostile flow and agent."""
    flow = tmp_path / "hostile_flow.py"
    flow.write_text(HOSTILE_FLOW)
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    agent = actor(tmp_path, "agent.sh", f'exec "{os.sys.executable}" "{script}"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    args = ["exec", "-f", str(flow), "-a", f"exec:{agent}", "-p", "rest_seconds=0.05"]
    return ws, [*args, "-p", "budget.turns=6", f"{SHOWN} objective {H}"]


def test_a_hostile_flow_and_agent_show_as_text_in_every_command(
    hostile: tuple[Path, list[str]], tmp_path: Path
) -> None:
    ws, args = hostile
    _clean(cli("flows", "show", args[2], cwd=ws))
    run = cli(*args, cwd=ws, timeout=120)
    assert run.returncode == 0, run.stderr
    out = _clean(run)  # the plain log (stdout) and the end line (stderr)
    assert f"{SHOWN} ended" in out and "[link=https://evil.example/]" in out
    for command in (
        ("status",),
        ("events",),
        ("show",),
        ("runs",),
        ("artifacts",),
        ("trace", "-o", str(tmp_path / "trace.json")),
    ):
        proc = cli(*command, cwd=ws)
        assert proc.returncode == 0, (command, proc.stderr)
        _clean(proc, shown=command[0] != "trace")
    assert f"{SHOWN} failure" in cli("status", cwd=ws).stdout
    streamed = cli(*args[:-1], "--json", args[-1], cwd=ws, timeout=120)
    assert streamed.returncode == 0, streamed.stderr
    kinds = [json.loads(ln)["kind"] for ln in _clean(streamed).splitlines() if ln.startswith("{")]
    assert "turn_valid" in kinds
    # JSON keeps the data whole: the controls are escaped, not dropped.
    st = json.loads(_clean(cli("status", "--json", cwd=ws)))
    assert st["display"] == [f"{SHOWN} display {H}"] and st["lanes"][0]["x"] == H
    [package] = json.loads(_clean(cli("artifacts", "--json", cwd=ws))).values()
    assert package[0]["description"] == f"{SHOWN} file {H}"
    lines = _clean(cli("events", "--json", cwd=ws)).splitlines()
    assert f"{SHOWN} last {H}" in [json.loads(ln)["payload"].get("summary") for ln in lines]


def test_the_live_view_shows_a_hostile_run_as_text(hostile: tuple[Path, list[str]]) -> None:
    ws, args = hostile
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="120", LINES="40", TERM="xterm-256color")
    proc = subprocess.Popen(
        [*FLAMECHASE, *args], cwd=ws, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, text[-2000:]
    assert SHOWN in text and "on turn" in text
    # Only the live display's own sequences: colours, cursor up, erase line, cursor shown.
    own = re.sub(r"\x1b\[[0-9;]*[mAK]|\x1b\[\?25[lh]|\r\n|\r", "", text)
    bad = CONTROL.search(own)
    assert bad is None, f"{bad.group()!r} reached the terminal: {own[max(0, bad.start() - 60) :]!r}"
    assert "\x1b[6n" not in text and "\x1b[2J" not in text and "\x1b]" not in text


def test_the_prompt_shows_a_hostile_run_as_text(
    hostile: tuple[Path, list[str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from flamechase.cli import prompt
    from flamechase.cli.run_cmd import start

    ws, args = hostile
    flow, agent = args[2], args[4]
    profile = ("profile", "set", flow, "-a", f"worker={agent}", "-p", "budget.turns=6")
    cli(*profile, "-p", "rest_seconds=0.05", cwd=ws, check=True)
    broken = ws.parent / "broken_flow.py"  # a flow that breaks after its profile was saved
    broken.write_text(HOSTILE_FLOW)
    cli("profile", "set", str(broken), "-a", f"worker={agent}", cwd=ws, check=True)
    broken.write_text(f"raise RuntimeError({H!r})\n")
    monkeypatch.chdir(ws)
    with create_pipe_input() as keys:
        keys.send_text(f"${flow} {SHOWN} {H.replace(chr(13), '')}\r${broken} go\rexit\r")
        session: PromptSession[str] = PromptSession(input=keys, output=DummyOutput())
        assert prompt.repl(runner=start, session=session) == 0
    said = capsys.readouterr()
    out = _clean(subprocess.CompletedProcess([], 0, said.out, said.err))
    assert f"{SHOWN} ended" in out and "failed to import: RuntimeError: " in out
