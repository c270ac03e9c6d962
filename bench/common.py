"""What every section of `python -m bench` shares: a figure, interleaving, clocks and stamps."""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Figure:
    """One row: flamechase (a) against its peer or floor (b), pair by pair. `key` names the
    row for the targets table."""

    what: str
    unit: str
    a: list[float]
    peer: str
    b: list[float]
    key: str = ""

    def ratios(self) -> list[float]:
        return [x / y for x, y in zip(self.a, self.b, strict=True) if y > 0]

    def ratio(self) -> float | None:
        r = self.ratios()
        return statistics.median(r) if r else None

    def med_a(self) -> float:
        return statistics.median(self.a)

    def med_b(self) -> float:
        return statistics.median(self.b)

    def row(self) -> str:
        ratios = self.ratios()
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"
        ratio = f"x{statistics.median(ratios):.2f}" if ratios else "-"
        return (
            f"| {self.what} | {_num(self.med_a())} {self.unit} | {self.peer} | "
            f"{_num(self.med_b())} {self.unit} | {ratio} | {spread} | {len(self.a)} |"
        )


def _num(x: float) -> str:
    if x and abs(x) < 0.1:
        return f"{x:.3f}"
    if x and abs(x) < 10:
        return f"{x:.2f}"
    return f"{x:,.1f}"


def interleave(
    rounds: int, a: Callable[[], float], b: Callable[[], float], *, warm: bool = True
) -> tuple[list[float], list[float]]:
    """`rounds` pairs measured A B A B ... (after one uncounted warm-up of each)."""
    if warm:
        a(), b()
    xs: list[float] = []
    ys: list[float] = []
    for _ in range(rounds):
        xs.append(a())
        ys.append(b())
    return xs, ys


def wall_ms(argv: list[str], **kw: object) -> Callable[[], float]:
    def run() -> float:
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, **kw)  # type: ignore[call-overload]
        return (time.perf_counter() - t0) * 1000

    return run


def exec_usage(
    argv: list[str], cwd: Path, env: dict[str, str], what: str
) -> resource.struct_rusage:
    """Run flamechase `argv` to its end in `cwd`; the resources it and its children used
    (wait4's usage). Exit 0 or 3 (a run held: it still ran) is a measurement; anything else
    ends the bench, saying `what` failed and the tail of its stderr."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):
        err = proc.stderr.read().decode()[-800:] if proc.stderr else ""
        raise SystemExit(f"{what} failed ({code}): {err}")
    return usage


def allocated(path: Path) -> float:
    """MB allocated under `path` (du)."""
    out = subprocess.run(["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True)
    return int(out.stdout.split()[0]) / 1e6


def written_by_me() -> int:
    """Bytes this process and its reaped children have dirtied for storage so far
    (/proc/self/io: the kernel adds a child's count to its parent's when it is reaped)."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    return 0


F_SETPIPE_SZ = 1031


class Stamps:
    """A FIFO agents write their stamps to (`date +%s%N`, one line each, with a label).

    A FIFO because a jailed agent sees the whole file system read-only: opening a FIFO for
    writing is allowed on a read-only mount, a regular file is not. This process holds it
    open read-write (so writers never block on open) and reads what was written when asked;
    its buffer is made large enough for every stamp of a run (1 MB: about 40,000 lines).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        os.mkfifo(path)
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        with contextlib.suppress(OSError):
            fcntl.fcntl(self.fd, F_SETPIPE_SZ, 1 << 20)
        self._buf = b""

    def read(self) -> list[tuple[str, int]]:
        """(label, ns) of every stamp written since the last read."""
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        out = []
        for line in lines:
            parts = line.decode().split()
            if parts:
                out.append((" ".join(parts[:-1]), int(parts[-1])))
        return out

    def close(self) -> None:
        os.close(self.fd)


def make_actor(path: Path, report: str, plan: str = '{"lanes":[]}', lane_body: str = "") -> Path:
    """An `exec:` agent that stamps `$FLAMECHASE_LANE ns` to $STAMPS first thing, then writes
    `plan` (a turn outside lanes) or runs `lane_body` and writes `report` (a lane turn)."""
    path.write_text(
        "#!/bin/sh\n"
        'echo "$FLAMECHASE_LANE $(date +%s%N)" > "$STAMPS"\n'
        'if [ -z "$FLAMECHASE_LANE" ]; then\n'
        f"  echo '{plan}' > \"$FLAMECHASE_REPORT\"\n"
        "else\n"
        f"{lane_body}"
        f"  echo '{report}' > \"$FLAMECHASE_REPORT\"\n"
        "fi\n"
    )
    path.chmod(0o755)
    return path


PROGRESS = '{"status":"progress","summary":"instant"}'
