"""How `exec` shows events as they happen: JSON lines, or one plain line per event.

A view must never stop a run: when whoever reads stdout goes away (`| head -3`, a pager that
quits, a dead `tee`, a closed terminal) the view goes quiet and the run goes on to its end.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from typing import Any, TextIO

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
        self.out.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.out.flush()


def describe(event: dict[str, Any]) -> str:
    """One human line for an event."""
    p = event.get("payload", {})
    kind = event["kind"]
    who = " ".join(x for x in (event.get("lane"), event.get("actor")) if x)
    at = str(event.get("at", ""))[11:19]
    bits: list[str] = []
    if kind == "turn_started":
        bits = [f"turn {p.get('turn')} starts ({p.get('backend')})"]
        if p.get("delivered"):
            bits.append(f"with {len(p['delivered'])} report(s) in its inbox")
    elif kind == "turn_valid":
        bits = [f"turn {p.get('turn')} {p.get('report_status')}: {p.get('summary', '')[:120]}"]
        if p.get("cost_usd"):
            bits.append(f"${p['cost_usd']:.4f}")
        bits.append(f"{p.get('duration', 0):.1f}s")
    elif kind == "turn_failed":
        bits = [f"turn {p.get('turn')} FAILED: {str(p.get('error', ''))[:160]}"]
    elif kind == "turn_interrupted":
        bits = [f"turn {p.get('turn')} cut: {p.get('reason')}"]
    elif kind == "lane_held":
        bits = [f"HELD: {str(p.get('reason', ''))[:160]}"]
    elif kind == "lane_paused":
        bits = [f"paused until {p.get('until')}: {p.get('reason')}"]
    elif kind == "candidate_best_updated":
        bits = [f"new best {p.get('metric')} = {p.get('value')} ({p.get('report_id')})"]
    elif kind == "candidate_submitted":
        v = "verified" if p.get("verified") else f"unverified ({p.get('unverified_reason')})"
        bits = [f"submitted {p.get('metric')}={p.get('claimed')} {v}"]
    elif kind == "report_published":
        n = len(p.get("artifacts", []))
        bits = [f"report {p.get('report_id')} published"
                + (f" with {n} frozen artifact(s)" if n else "")]
    elif kind == "plan_attempt":
        bits = [f"planning attempt {p.get('attempt')}: {p.get('status')}"
                + (f" ({p.get('error')})" if p.get("error") else "")]
    elif kind in ("run_finished", "run_stopped", "run_failed", "run_held"):
        bits = [f"run {kind[4:]}: {p.get('message')}"]
    elif kind == "budget_spent":
        bits = [f"budget {p.get('key')} spent; no new turns"]
    elif kind == "notice":
        bits = [str(p.get("message"))]
    else:
        bits = [kind.replace("_", " ")]
    return f"{at} {who + ' ' if who else ''}{' · '.join(bits)}"


class LineObserver:
    def __init__(self, out: TextIO | None = None) -> None:
        self.out = QuietWhenGone(out or sys.stdout)

    def event(self, event: dict[str, Any]) -> None:
        self.out.write(describe(event) + "\n")
        self.out.flush()
