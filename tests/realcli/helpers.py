"""Reading what a real-CLI run left: its turns (with usage) and transcripts."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.realcli.script import Usage


def turns(state_home: Path) -> list[dict[str, Any]]:
    """Every turn row of the newest run, oldest first (read-only)."""
    [db] = sorted((state_home / "runs").glob("*/run.db"))[-1:]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        rows = con.execute("SELECT * FROM turns ORDER BY id").fetchall()
    finally:
        con.close()
    return [dict(r) for r in rows]


def transcript(path: str | Path) -> list[dict[str, Any]]:
    """A turn's transcript: one JSON object per line (flamechase's own lines included)."""
    text = gzip.decompress(Path(path).read_bytes()).decode()
    return [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]


def tokens_of(row: dict[str, Any]) -> Usage:
    return Usage(
        row["input_tokens"],
        row["output_tokens"],
        row["cache_read_tokens"],
        row["cache_write_tokens"],
    )


def times(usage: Usage, n: int) -> Usage:
    return Usage(usage.input * n, usage.output * n, usage.cache_read * n, usage.cache_write * n)
