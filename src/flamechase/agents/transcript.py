"""The raw stdout of an agent session, kept gzip'd at `<turn dir>/transcript.jsonl.gz` (0600).

Lines are the CLI's own, plus flamechase's (`{"flamechase": "started" | "ended", ...}`), so
the file exists and says what ran even when the CLI dies before printing. Must not fail a turn:
a write error disables the transcript.
"""

from __future__ import annotations

import contextlib
import gzip
import os
from pathlib import Path
from typing import BinaryIO

__all__ = ["TRANSCRIPT_NAME", "Transcript"]

TRANSCRIPT_NAME = "transcript.jsonl.gz"


class Transcript:
    """The session's raw stdout, one line per line, gzip'd, readable while it grows.

    Each flush ends a deflate block (Z_SYNC_FLUSH), so the file decompresses up to the last
    answer even if the engine dies mid-session. A write error disables the transcript rather
    than failing the turn: the audit trail is valuable, the turn more so.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._raw: BinaryIO | None = None
        self._gz: gzip.GzipFile | None = None
        self.broken = False

    def _open(self) -> gzip.GzipFile | None:
        if self._gz is None and not self.broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(
                    self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600
                )
                os.fchmod(fd, 0o600)
                self._raw = os.fdopen(fd, "ab")
                # Appending makes a multi-member gzip file, which every reader accepts.
                self._gz = gzip.GzipFile(fileobj=self._raw, mode="ab", mtime=0)
            except OSError:
                self.broken = True
        return self._gz

    def write(self, line: bytes) -> None:
        gz = self._open()
        if gz is None:
            return
        try:
            gz.write(line)
            gz.write(b"\n")
        except OSError:
            self.broken = True

    def flush(self) -> None:
        if self._gz is not None and not self.broken:
            try:
                self._gz.flush()
                if self._raw is not None:
                    self._raw.flush()
            except OSError:
                self.broken = True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self._gz is not None:
                self._gz.close()
            if self._raw is not None:
                self._raw.close()
        self._gz = None
        self._raw = None

    @property
    def written(self) -> Path | None:
        return self.path if self.path.exists() else None
