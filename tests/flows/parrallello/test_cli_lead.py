"""The lead between blocks, end to end through the real `flamechase` command: a scripted
`lead` decides the next block, and its note reaches that block's builders and critic."""

from __future__ import annotations

from pathlib import Path

from tests.flows.parrallello.scripted import repo
from tests.flows.parrallello.test_cli import by_front, run
from tests.helpers import cli, events, status


def test_a_leads_note_and_tickets_bind_the_next_block(tmp_path: Path) -> None:
    ws = repo(tmp_path, {"P": {"target": 3}}, blocks=2, rounds_per_block=1)
    note = "Raise VALUE once more and stop; nothing else."
    decision = {
        "items": [{"id": "G-T.P.value", "call": "recurring", "method": "raise it in one edit"}],
        "tickets": [{"id": "L-1", "severity": "major", "title": "VALUE to 3", "owner": "core"}],
        "lead_note": note,
    }
    proc = run(tmp_path, ws, {"P": {"lead": decision}}, "lead=true", lead=True)
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    (decided,) = by_front(evs, "lead_decided")["P"]
    assert decided["source"] == "lead" and decided["block"] == 2 and decided["note"] == note
    assert decided["tickets"] == ["G-T.P.value", "L-1"]  # most severe, longest open first
    # The lead's turn ran in a place of its own (no code), in the front's lane.
    places = {e["payload"]["place"]: e["payload"]["path"] for e in evs if e["kind"] == "place_made"}
    assert not (Path(places["leads/P"]) / "src").exists()
    valid = [e for e in evs if e["kind"] == "turn_valid" and e["lane"] in ("P", "P.core")]
    handoffs = [e["payload"]["result"].get("handoff", "") for e in valid if e["lane"] == "P.core"]
    summaries = [e["payload"]["result"].get("summary", "") for e in valid if e["lane"] == "P"]
    assert "LEAD: " not in handoffs[0] and handoffs[1].endswith(f"LEAD: {note}")
    assert summaries[-1].endswith(f"LEAD: {note}")
    st = status(ws)["fronts"]["P"]
    assert st["status"] == "approved" and st["lead"]["note"] == note
    assert st["lead"]["decisions"][0]["items"][0]["call"] == "recurring"
    shown = cli("events", cwd=ws).stdout
    assert "The lead decides front P's block 2 (G-T.P.value recurring)" in shown


def test_a_lead_splits_a_front_by_files_onto_its_spare_builder(tmp_path: Path) -> None:
    ws = repo(tmp_path, {"P": {"target": 3}}, blocks=2, rounds_per_block=1)
    split = {"core": ["src/P/core.py"], "docs": ["src/P/notes.md"]}
    decision = {
        "tickets": [{"id": "L-docs", "severity": "major", "title": "notes", "owner": "docs"}],
        "lead_note": "Two builders from now on: core raises VALUE, docs writes the notes.",
        "split": split,
    }
    config = {
        "P": {
            "lead": decision,
            "as": {"docs": {"skip_value": True, "write": {"src/P/notes.md": "notes\n"}}},
        }
    }
    proc = run(tmp_path, ws, config, "lead=true", lead=True)
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    (decided,) = by_front(evs, "lead_decided")["P"]
    assert decided["split"] == split
    builders = [
        e for e in evs if e["kind"] == "turn_started" and e["lane"] in ("P.core", "P.split")
    ]
    assert sorted((e["lane"], e["payload"]["turn"]) for e in builders) == [
        ("P.core", 1),
        ("P.core", 2),
        ("P.split", 2),
    ]
    checked = {(c["owner"], c["round"]): c for c in by_front(evs, "builder_checked")["P"]}
    assert checked[("docs", 2)]["accepted"] == 1 and checked[("docs", 2)]["outside"] == []
    assert checked[("core", 2)]["outside"] == []
    assert (ws / "src" / "P" / "notes.md").read_text() == "notes\n"
    assert (ws / "src" / "P" / "core.py").read_text() == "VALUE = 3\n"
    lanes = {ln["lane"]: ln for ln in status(ws)["lanes"]}
    assert lanes["P.split"]["owner"] == "docs" and lanes["P.split"]["files"] == ["src/P/notes.md"]


def _killed_in_block_one(tmp_path: Path, ws: Path) -> tuple[list[str], dict[str, str]]:
    """Run until block 1's builder hangs, then kill the engine: a run to resume."""
    import os
    import signal
    import subprocess
    import time

    from tests.flows.parrallello.scripted import actors
    from tests.flows.parrallello.test_cli import FAST
    from tests.helpers import FLAMECHASE

    args, env = actors(tmp_path, {"P": {"hang_round": 1}})
    cmd = ["exec", "-f", "parrallello", *args, "-p", FAST, "-p", "plan=PLAN.yaml", "raise"]
    engine = subprocess.Popen(
        [*FLAMECHASE, *cmd],
        cwd=ws,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    home = Path(os.environ["FLAMECHASE_HOME"])
    deadline = time.monotonic() + 120
    while not list(home.glob("runs/*/lanes/P.core/started-1")):
        assert engine.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    return cmd, env


def test_a_users_decision_on_resume_decides_the_next_block(tmp_path: Path) -> None:
    ws = repo(tmp_path, {"P": {"target": 3}}, blocks=2, rounds_per_block=1)
    cmd, env = _killed_in_block_one(tmp_path, ws)
    note = "From the user: raise VALUE to 3 in one edit."
    (tmp_path / "decision.yaml").write_text(
        "front: P\n"
        f"lead_note: {note!r}\n"
        "tickets: [{id: U-1, severity: major, title: VALUE to 3, owner: core}]\n"
    )
    proc = cli(*cmd, "-p", f"lead_decision={tmp_path / 'decision.yaml'}", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    (decided,) = by_front(evs, "lead_decided")["P"]
    assert decided["source"] == "user" and decided["block"] == 2 and decided["note"] == note
    assert "U-1" in decided["tickets"]
    valid = [e for e in evs if e["kind"] == "turn_valid" and e["lane"] == "P.core"]
    assert valid[-1]["payload"]["result"]["handoff"].endswith(f"LEAD: {note}")
    st = status(ws)["fronts"]["P"]
    assert st["status"] == "approved" and st["lead"]["decisions"][0]["source"] == "user"
    assert (
        "Your decision (-p lead_decision) decides front P's block 2" in cli("events", cwd=ws).stdout
    )


def test_a_users_decision_is_refused_like_a_leads(tmp_path: Path) -> None:
    ws = repo(tmp_path, {"P": {"target": 3}}, blocks=2, rounds_per_block=1)
    bad = tmp_path / "bad.json"
    bad.write_text('{"lead_note": "go", "items": [{"id": "X", "call": "recurring"}]}')
    proc = run(tmp_path, ws, {}, f"lead_decision={bad}")
    assert proc.returncode != 0
    assert "lead_decision" in proc.stderr and "state the change of method" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    # Valid alone but not for this front (an owner it does not have): an anomaly, the
    # rules decide, and the run goes on.
    (tmp_path / "stray.json").write_text(
        '{"P": {"lead_note": "go", "tickets": '
        '[{"id": "U", "severity": "major", "title": "t", "owner": "ghost"}]}}'
    )
    cmd, env = _killed_in_block_one(tmp_path, ws)
    proc = cli(*cmd, "-p", f"lead_decision={tmp_path / 'stray.json'}", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    (decided,) = by_front(evs, "lead_decided")["P"]
    assert decided["source"] == "rules"
    (refused,) = [a for a in by_front(evs, "anomaly")["P"] if a["what"] == "user-decision-refused"]
    assert "owner is not a builder of this front" in refused["detail"]


def test_without_a_lead_the_rules_split_an_overloaded_builder_and_change_method(
    tmp_path: Path,
) -> None:
    # The lead fails twice (an empty note), so the rules decide; the critic keeps 5 major
    # tickets open for core, whose two globs the rules halve onto the spare builder lane.
    owners = {"core": ["src/P/core.py", "src/P/notes.md"]}
    ws = repo(
        tmp_path,
        {"P": {"target": 3, "plan": {"owners": owners}}},
        blocks=2,
        rounds_per_block=3,
    )
    config = {
        "P": {
            "lead": {"lead_note": ""},
            "many": 5,
            "as": {"core-b": {"skip_value": True, "write": {"src/P/notes.md": "notes\n"}}},
        }
    }
    proc = run(tmp_path, ws, config, "lead=true", lead=True)
    assert "Traceback" not in proc.stderr
    evs = events(ws)
    (decided,) = by_front(evs, "lead_decided")["P"]
    assert decided["source"] == "rules" and decided["block"] == 2
    assert decided["split"] == {"core": ["src/P/core.py"], "core-b": ["src/P/notes.md"]}
    assert "its files are split" in decided["note"]
    assert {c["call"] for c in decided["items"]} == {"recurring"}  # open 3 rounds
    assert any(a["what"] == "lead-failed" for a in by_front(evs, "anomaly")["P"])
    split_turns = [e for e in evs if e["kind"] == "turn_started" and e["lane"] == "P.split"]
    assert split_turns and split_turns[0]["payload"]["turn"] == 4
    # The recurring tickets reach round 4's builders saying "change method".
    handoffs = [
        e["payload"]["result"]["handoff"]
        for e in evs
        if e["kind"] == "turn_valid" and e["lane"] in ("P.core", "P.split")
    ]
    assert "METHOD M-" not in "".join(handoffs[:3]) and "METHOD M-" in "".join(handoffs[3:])
    checked = {(c["owner"], c["round"]): c for c in by_front(evs, "builder_checked")["P"]}
    assert checked[("core-b", 4)]["accepted"] >= 1 and checked[("core-b", 4)]["outside"] == []
    lanes = {ln["lane"]: ln for ln in status(ws)["lanes"]}
    assert lanes["P.split"]["owner"] == "core-b"
    assert lanes["P.split"]["files"] == ["src/P/notes.md"]
