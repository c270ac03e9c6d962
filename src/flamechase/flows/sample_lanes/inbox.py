"""What a simulated integrating lane takes from its inbox: other lanes' solver.py artifacts
whose blobs hash to what was recorded, and a scratch copy of the tree to measure one in."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["Candidate", "scratch_copy", "verified_candidates"]

_MAX_CANDIDATES = 6  # inbox artifacts measured per turn, at most
_MAX_BLOB = 1 << 20  # an inbox solver.py larger than this is not a solver worth measuring


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """A verified inbox artifact: its bytes hash to what the publishing lane recorded."""

    report_id: str
    lane: str
    path: str
    sha256: str
    data: bytes


def scratch_copy(ws: Path, solver: bytes) -> Path:
    """A temporary directory with the tree's top-level Python files and `solver` as solver.py."""
    scratch = Path(tempfile.mkdtemp(prefix="flamechase-sim-"))
    for entry in os.scandir(ws):
        if entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
            shutil.copyfile(entry.path, scratch / entry.name)
    (scratch / "solver.py").write_bytes(solver)
    return scratch


def _artifacts_of(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Artifact records of a delivered report, one per path, the hashed one where there is one.

    The engine lists frozen artifacts (with sha256 and blob) beside the report; the report's own
    deliverable lists the same paths without them.
    """
    by_path: dict[str, Mapping[str, Any]] = {}
    deliverable = report.get("deliverable")
    for source in (
        report.get("artifacts"),
        deliverable.get("artifacts") if isinstance(deliverable, Mapping) else None,
    ):
        if not isinstance(source, list):
            continue
        for art in source:
            if isinstance(art, Mapping):
                path = str(art.get("path", ""))
                held = by_path.get(path)
                if held is None or ("blob" not in held and "blob" in art):
                    by_path[path] = art
    return list(by_path.values())


def verified_candidates(
    inbox_path: str | None, current: bytes
) -> tuple[list[Candidate], list[str]]:
    """The inbox's solver.py artifacts whose blob hashes as recorded, and why others were not."""
    if not inbox_path:
        return [], []
    try:
        with open(inbox_path, encoding="utf-8") as f:
            inbox = json.load(f)
    except (OSError, ValueError) as exc:
        return [], [f"inbox unreadable ({exc.__class__.__name__}); nothing integrated"]
    if not isinstance(inbox, list):
        return [], ["inbox is not a JSON list; nothing integrated"]
    current_sha = hashlib.sha256(current).hexdigest()
    seen = {current_sha}
    candidates: list[Candidate] = []
    refused: list[str] = []
    for entry in inbox:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("report"), Mapping):
            continue
        report_id = str(entry.get("report_id", "?"))
        lane = str(entry.get("lane", "?"))
        for art in _artifacts_of(entry["report"]):
            path = str(art.get("path", ""))
            if PurePosixPath(path).name != "solver.py":
                continue
            sha, blob = art.get("sha256"), art.get("blob")
            if not isinstance(sha, str) or not isinstance(blob, str):
                refused.append(f"report {report_id} {path}: no sha256/blob; not integrated")
                continue
            data = _read_blob(Path(blob))
            if data is None:
                refused.append(f"report {report_id} {path}: blob unreadable; not integrated")
                continue
            actual = hashlib.sha256(data).hexdigest()
            if actual != sha.lower():
                refused.append(
                    f"report {report_id} {path}: sha256 mismatch (recorded {sha[:16]}, "
                    f"blob {actual[:16]}); not integrated"
                )
                continue
            if actual in seen:  # already in the tree, or offered twice
                continue
            seen.add(actual)
            if len(candidates) < _MAX_CANDIDATES:
                candidates.append(Candidate(report_id, lane, path, actual, data))
    return candidates, refused


def _read_blob(path: Path) -> bytes | None:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_BLOB:
            return None
        return path.read_bytes()
    except OSError:
        return None
