"""How `exec` shows events as they happen: JSON lines, or one plain line per event.

A view must never stop a run: when whoever reads stdout goes away (`| head -3`, a pager that
quits, a dead `tee`, a closed terminal) the view goes quiet and the run goes on to its end.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from flamechase.text import printable, printable_json

if TYPE_CHECKING:
    from flamechase.view.state import Change

# A reader that is gone: a closed pipe (EPIPE), a hung-up terminal (EIO, ENXIO).
GONE = frozenset({errno.EPIPE, errno.EIO, errno.ENXIO})


class QuietWhenGone:
    """A text stream that drops what it is given once its reader is gone.

    Then the descriptor is pointed at /dev/null, so the interpreter's last flush at exit
    fails no more than the writes did. Everything else is the wrapped stream's.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self._went(exc)
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError as exc:
                self._went(exc)

    def _went(self, exc: OSError) -> None:
        if exc.errno not in GONE:
            raise exc
        self.gone = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass  # not a real descriptor (a test's StringIO): dropping the text is enough

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class JsonObserver:
    """One JSON object per event on stdout, nothing else."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = QuietWhenGone(out or sys.stdout)

    def event(self, event: dict[str, Any]) -> None:
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        self.out.write(printable_json(line) + "\n")
        self.out.flush()


class Narrator:
    """One human line per event, `HH:MM:SS sentence`, as the event shows itself against the
    views' fold (events/present.py): the same sentence the live view and the replay show."""

    def __init__(self) -> None:
        from flamechase.view.state import RunFold

        self.fold = RunFold()

    def change(self, event: dict[str, Any]) -> Change:
        return self.fold.apply(event)

    def line(self, event: dict[str, Any]) -> str:
        return f"{str(event.get('at') or '')[11:19]} {self.change(event).shown.text}"


class LineObserver:
    """One line per event on stdout, but for the run's end: `exec` says that once, on stderr,
    with the run's id and what to do next (exec_cmd.end_line)."""

    def __init__(self, out: TextIO | None = None) -> None:
        from flamechase.view.state import END_KINDS  # the fold's module, loaded when a run is

        self.out = QuietWhenGone(out or sys.stdout)
        self.narrator = Narrator()
        self._ends = END_KINDS

    def event(self, event: dict[str, Any]) -> None:
        line = self.narrator.line(event)  # folded all the same: the fold is the run's
        if event.get("kind") in self._ends:
            return
        self.out.write(printable(line) + "\n")
        self.out.flush()
