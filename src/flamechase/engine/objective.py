"""What the run is for: the task text, `continue`/`resume` markers, and fingerprints."""

from __future__ import annotations

import hashlib
from pathlib import Path

from flamechase.errors import TaskError

# A bare continuation word (any case, optional trailing punctuation) reads TASK.md.
CONTINUATION_MARKERS = frozenset({"continue", "resume", "go on", "继续"})
TASK_FILE = "TASK.md"
TASK_LIMIT = 1024 * 1024


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.strip().replace("\r\n", "\n").encode("utf-8")).hexdigest()


def is_marker(task: str) -> bool:
    return task.strip().rstrip(".!。！").strip().casefold() in CONTINUATION_MARKERS


def read_task_file(workspace: Path) -> str | None:
    """TASK.md's text, or None when there is none."""
    path = workspace / TASK_FILE
    if not path.is_file():
        return None
    try:
        data = path.read_bytes()[:TASK_LIMIT]
        text = data.decode("utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(
            f"cannot read {path}: {exc}; fix the file or pass the task inline"
        ) from None
    if not text:
        raise TaskError(f"{path} is empty; write the objective in it or pass the task inline")
    return text
