"""A reader of `flamechase exec` that goes away never stops the run.

`flamechase exec … | head -3`, a pager that quits, a dead `tee`, a closed terminal: the view
goes quiet, the run goes on to its end and exits as it would have, with no traceback and no
"Exception ignored" at exit.
"""

from __future__ import annotations

import errno
import io
import os
import subprocess
from pathlib import Path

import pytest

from flamechase.cli.observe import QuietWhenGone
from tests.helpers import FLAMECHASE, REPORT_OK, actor, status

TURNS = 20


def _exec_argv(tmp_path: Path, *extra: str) -> list[str]:
    a = actor(tmp_path, "ok.sh", REPORT_OK)
    return [
        *FLAMECHASE,
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"exec:{a}",
        "-a",
        f"exec:{a}",
        "-p",
        f"budget.turns={TURNS},rest_seconds=0.05",
        *extra,
        "keep going",
    ]


def _finished_whole(ws: Path, code: int, err: str) -> None:
    assert code == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    st = status(ws)
    assert st["status"] == "finished", st
    assert sum(lane["turns"] for lane in st["lanes"]) == TURNS


@pytest.mark.parametrize("view", [[], ["--json"]])
def test_a_closed_pipe_on_stdout_does_not_stop_the_run(tmp_path: Path, view: list[str]) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.Popen(
        _exec_argv(tmp_path, *view),
        cwd=ws,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = [proc.stdout.readline() for _ in range(2)]  # `| head -2`
    assert all(first), first
    proc.stdout.close()
    err = proc.stderr.read()
    _finished_whole(ws, proc.wait(timeout=120), err)


def test_a_closed_terminal_stops_the_dashboard_not_the_run(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    master, slave = os.openpty()
    proc = subprocess.Popen(
        _exec_argv(tmp_path),
        cwd=ws,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "100"},
    )
    os.close(slave)
    try:
        assert os.read(master, 1024)  # the dashboard is drawing
    finally:
        os.close(master)  # the terminal goes away: writes now fail with EIO
    assert proc.stderr is not None
    err = proc.stderr.read()
    _finished_whole(ws, proc.wait(timeout=120), err)


def test_a_stream_whose_reader_is_gone_drops_text_and_says_so() -> None:
    read, write = os.pipe()
    os.close(read)
    stream = QuietWhenGone(io.TextIOWrapper(io.FileIO(write, "w"), encoding="utf-8"))
    assert stream.write("x" * 100_000) == 100_000  # larger than the pipe: written now
    stream.flush()
    assert stream.gone
    assert stream.write("more") == 4
    stream.flush()
    stream.close()


def test_other_write_errors_are_not_taken_for_a_reader_gone() -> None:
    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        QuietWhenGone(Full()).write("x")
