"""tools/ingress: an adapter's JSONL file read a bounded pass at a time from a cursor."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from flamechase.tools import ingress


def _line(n: int) -> str:
    return json.dumps({"event_id": f"e{n}"}) + "\n"


def _pass(path: Path, cursor: Any) -> Any:
    return ingress.read(str(path), int(cursor["offset"]), str(cursor["identity"]))


def test_a_pass_reads_whole_lines_and_a_truncated_last_line_waits(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(_line(1) + _line(2) + '{"event_id": "e3"')
    got = _pass(log, {"offset": 0, "identity": ""})
    assert [e["event_id"] for e in got["events"]] == ["e1", "e2"]
    with log.open("a") as f:
        f.write("}\n")
    again = _pass(log, got["cursor"])
    assert [e["event_id"] for e in again["events"]] == ["e3"]
    assert _pass(log, again["cursor"])["events"] == []


def test_a_rotated_file_is_read_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(_line(1) + _line(2))
    cursor = _pass(log, {"offset": 0, "identity": ""})["cursor"]
    os.rename(log, tmp_path / "events.1")
    log.write_text(_line(3) + _line(4) + _line(5))
    got = _pass(log, cursor)
    assert [e["event_id"] for e in got["events"]] == ["e3", "e4", "e5"]


def test_oversized_and_broken_lines_are_skipped_with_an_error(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    big = json.dumps({"event_id": "x" * (ingress.LINE_LIMIT + 10)}) + "\n"
    log.write_text(_line(1) + big + "not json\n" + _line(2))
    got = _pass(log, {"offset": 0, "identity": ""})
    assert [e["event_id"] for e in got["events"]] == ["e1", "e2"]
    errors = got["errors"]
    assert len(errors) == 2
    assert "over 65536 bytes: skipped" in errors[0]
    assert "not JSON" in errors[1]
    assert got["cursor"]["offset"] == log.stat().st_size


def test_a_pass_is_bounded_and_a_missing_file_is_no_events(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text("".join(_line(n) for n in range(ingress.MAX_LINES + 50)))
    got = _pass(log, {"offset": 0, "identity": ""})
    assert len(got["events"]) == ingress.MAX_LINES
    assert _pass(tmp_path / "none", {"offset": 0, "identity": ""})["events"] == []
