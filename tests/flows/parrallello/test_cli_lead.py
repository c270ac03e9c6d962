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
