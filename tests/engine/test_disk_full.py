"""A full disk mid-run ends the run with one line naming the file system and the space to
free, `failed` and resumable; never a traceback. Needs root to mount a small tmpfs."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import actor, cli

FILLER = """
    lane="$FLAMECHASE_RUN_DIR/lanes/lane-1"
    if [ "$FLAMECHASE_TURN" = 3 ] && [ ! -e "$lane/filled" ]; then
      # Fill the state home's file system once, as another program on the machine might.
      touch "$lane/filled"
      head -c 4000000 /dev/zero > "$lane/junk" 2>/dev/null
    fi
    echo '{"status":"progress","summary":"a turn"}' > "$FLAMECHASE_REPORT"
"""


@pytest.fixture
def small_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "small-home"
    home.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", str(home)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield home
    finally:
        subprocess.run(["umount", "-l", str(home)], check=False)


def test_a_full_disk_ends_the_run_in_one_line_and_it_resumes(
    tmp_path: Path, small_home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    a = actor(tmp_path, "a.sh", FILLER)
    env = {"FLAMECHASE_HOME": str(small_home)}
    args = [
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"exec:{a}",
        "-a",
        f"exec:{a}",
        "-p",
        "budget.turns=6,rest_seconds=0.05",
        "fill it",
    ]
    proc = cli(*args, cwd=ws, env=env, timeout=90)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert f"the file system at {small_home} " in last and "is full" in last
    assert "resume the run with --resume" in last
    # Room again: the run picks up where it stopped and ends as its budget says.
    junk = next(small_home.glob("runs/*/lanes/lane-1/junk"))
    junk.unlink()
    again = cli(*args[:-1], "--resume", "fill it", cwd=ws, env=env, timeout=90)
    assert again.returncode == 0, again.stderr
    st = cli("status", "--json", cwd=ws, env=env)
    assert '"status": "finished"' in st.stdout
