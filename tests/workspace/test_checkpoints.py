"""Checkpoints count only for exactly this turn and attempt, and only when terminal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flamechase.workspace.checkpoints import CHECKPOINT_LIMIT, read_checkpoint

IDENTITY: dict[str, Any] = {"run_id": "20260101-abc", "lane": "lane-2", "turn": 3, "attempt": 1}
REPORT = {"status": "progress", "summary": "did things"}


def _write(path: Path, identity: dict[str, Any], report: object = REPORT) -> Path:
    path.write_text(json.dumps({"identity": identity, "report": report}))
    return path


def test_terminal_checkpoint_for_this_turn_is_used(tmp_path: Path) -> None:
    path = _write(tmp_path / "cp.json", {**IDENTITY, "phase": "terminal"})
    assert read_checkpoint(path, IDENTITY) == REPORT
    assert read_checkpoint(path, {**IDENTITY, "phase": "ignored"}) == REPORT


def test_working_checkpoint_is_ignored(tmp_path: Path) -> None:
    path = _write(tmp_path / "cp.json", {**IDENTITY, "phase": "working"})
    assert read_checkpoint(path, IDENTITY) is None
    path = _write(tmp_path / "cp.json", dict(IDENTITY))
    assert read_checkpoint(path, IDENTITY) is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("run_id", "20260101-other"),
        ("lane", "lane-3"),
        ("turn", 2),
        ("attempt", 2),
        ("turn", "3"),
        ("turn", 3.0),
        ("attempt", True),
        ("attempt", None),
    ],
)
def test_other_turn_or_attempt_is_ignored(tmp_path: Path, key: str, value: object) -> None:
    path = _write(tmp_path / "cp.json", {**IDENTITY, key: value, "phase": "terminal"})
    assert read_checkpoint(path, IDENTITY) is None


def test_missing_identity_key_is_ignored(tmp_path: Path) -> None:
    identity = {k: v for k, v in IDENTITY.items() if k != "attempt"}
    path = _write(tmp_path / "cp.json", {**identity, "phase": "terminal"})
    assert read_checkpoint(path, IDENTITY) is None
    assert read_checkpoint(path, identity) is None


def test_symlinked_checkpoint_is_absent(tmp_path: Path) -> None:
    real = _write(tmp_path / "real.json", {**IDENTITY, "phase": "terminal"})
    link = tmp_path / "cp.json"
    link.symlink_to(real)
    assert read_checkpoint(link, IDENTITY) is None
    null = tmp_path / "null.json"
    null.symlink_to("/dev/null")
    assert read_checkpoint(null, IDENTITY) is None


def test_fifo_checkpoint_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "cp.json"
    os.mkfifo(fifo)
    assert read_checkpoint(fifo, IDENTITY) is None


def test_oversized_checkpoint_is_absent(tmp_path: Path) -> None:
    path = tmp_path / "cp.json"
    padding = "x" * CHECKPOINT_LIMIT
    _write(path, {**IDENTITY, "phase": "terminal"}, {"summary": padding})
    assert read_checkpoint(path, IDENTITY) is None


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\xff\xfe not utf-8",
        b"{not json",
        b"[]",
        b'"string"',
        b'{"identity": [], "report": {}}',
        b'{"identity": {"run_id": "20260101-abc", "lane": "lane-2", "turn": 3, "attempt": 1,'
        b' "phase": "terminal"}, "report": []}',
        b"[" * 200_000,
    ],
    ids=lambda raw: repr(raw[:30]),
)
def test_malformed_checkpoint_is_absent(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "cp.json"
    path.write_bytes(raw)
    assert read_checkpoint(path, IDENTITY) is None


def test_missing_or_directory_checkpoint_is_absent(tmp_path: Path) -> None:
    assert read_checkpoint(tmp_path / "nope.json", IDENTITY) is None
    assert read_checkpoint(tmp_path, IDENTITY) is None


@settings(max_examples=10, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_arbitrary_bytes_never_raise(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    path = tmp_path_factory.getbasetemp() / "hypothesis-cp.json"
    path.write_bytes(raw)
    result = read_checkpoint(path, IDENTITY)
    assert result is None or isinstance(result, dict)


@settings(max_examples=10, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=6,
    )
)
def test_arbitrary_json_never_raises(
    tmp_path_factory: pytest.TempPathFactory, document: object
) -> None:
    path = tmp_path_factory.getbasetemp() / "hypothesis-cp.json"
    path.write_text(json.dumps({"identity": document, "report": document}))
    result = read_checkpoint(path, IDENTITY)
    assert result is None or isinstance(result, dict)
