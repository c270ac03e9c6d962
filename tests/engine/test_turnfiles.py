"""A recorded turn's files: what the run database holds dropped, the rest gzipped, private,
and nothing an agent planted followed."""

from __future__ import annotations

import gzip
import os
import stat
from pathlib import Path

from flamechase.engine.turnfiles import settle


def _turn(d: Path) -> Path:
    d.mkdir(mode=0o700)
    (d / "prompt.md").write_text("do the task\n" * 200)
    (d / "report.json").write_text('{"status": "progress"}')
    (d / "usage.json").write_text('{"output_tokens": 3}')
    (d / "inbox.json").write_text("[]")
    return d


def test_a_valid_turn_keeps_its_prompt_and_usage_gzipped_and_not_its_report(
    tmp_path: Path,
) -> None:
    d = _turn(tmp_path / "00001-1")
    settle(d, valid=True)
    assert sorted(p.name for p in d.iterdir()) == ["inbox.json", "prompt.md.gz", "usage.json.gz"]
    assert gzip.decompress((d / "prompt.md.gz").read_bytes()) == b"do the task\n" * 200
    assert stat.S_IMODE((d / "prompt.md.gz").stat().st_mode) == 0o600
    assert (d / "prompt.md.gz").stat().st_size < 200


def test_a_failed_turn_keeps_what_its_agent_reported(tmp_path: Path) -> None:
    d = _turn(tmp_path / "00001-1")
    settle(d, valid=False)
    assert gzip.decompress((d / "report.json.gz").read_bytes()) == b'{"status": "progress"}'
    assert not (d / "report.json").exists()


def test_links_and_odd_files_an_agent_left_are_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    d = tmp_path / "00001-1"
    d.mkdir()
    (d / "prompt.md").symlink_to(secret)
    os.mkfifo(d / "usage.json")
    (d / "report.json").symlink_to(secret)
    settle(d, valid=True)
    assert sorted(p.name for p in d.iterdir()) == ["prompt.md", "report.json", "usage.json"]
    assert secret.read_text() == "secret"
    linked = tmp_path / "linked"
    linked.symlink_to(_turn(tmp_path / "elsewhere"))
    settle(linked, valid=True)  # the turn's directory swapped for a link: left alone
    assert (tmp_path / "elsewhere" / "report.json").exists()
    settle(tmp_path / "missing", valid=True)
