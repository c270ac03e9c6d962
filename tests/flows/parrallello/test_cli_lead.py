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
