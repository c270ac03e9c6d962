"""The peer's column: hmz 0.2.2 (the published runtime) against flamechase, same fake `claude`.

hmz needs Python >= 3.12. `venv()` finds the newest such interpreter (on PATH as
python3.N, or under ~/.pyenv/versions), and makes a venv for it once, under
~/.cache/flamechase-bench/, with `pip install hmz==0.2.2`; `None` and why when there is
none or the install fails (the bench then skips the column, saying so).

Both runtimes run their flame_chase, two chasers, on the fake `claude` of tests/agents/fakes
(Claude Code's print mode, stream-JSON). The `claude` on PATH is a wrapper that stamps the
clock (ns) before it starts the fake, so the start-to-start gap is measured at the agent's
side, the same way for both: whatever the runtime does between one agent process and the next
(collect, record, prompt, spawn) plus the fake's own turn. flamechase rests 50 ms between turns
(its least `rest_seconds`); hmz does not rest. A run is cut once its agents have started the
turns measured (hmz has no turn budget).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

VERSION = "0.2.2"
CACHE = Path.home() / ".cache" / "flamechase-bench"
ROOT = Path(__file__).resolve().parents[1]


def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
        return (int(out[0]), int(out[1]))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def newest_python() -> tuple[str, tuple[int, int]] | None:
    """The newest Python >= 3.12 found here, with its version."""
    found: list[str] = []
    for minor in range(12, 20):
        if path := shutil.which(f"python3.{minor}"):
            found.append(path)
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        found += [str(p / "bin" / "python") for p in pyenv.iterdir() if re.match(r"3\.\d+", p.name)]
    best: tuple[str, tuple[int, int]] | None = None
    for path in found:
        if not Path(path).is_file():
            continue
        v = _version(path)
        if v is not None and v >= (3, 12) and (best is None or v > best[1]):
            best = (path, v)
    return best


def venv() -> tuple[Path | None, str]:
    """(the `hmz` program of a venv with hmz 0.2.2, what was found) or (None, why not)."""
    python = newest_python()
    if python is None:
        return None, "no Python >= 3.12 was found (PATH, ~/.pyenv/versions)"
    path, (major, minor) = python
    where = CACHE / f"hmz-{VERSION}-py{major}.{minor}"
    hmz = where / "bin" / "hmz"
    if hmz.is_file():
        return hmz, f"hmz {VERSION} in {where} (Python {major}.{minor})"
    try:
        subprocess.run([path, "-m", "venv", str(where)], check=True, capture_output=True)
        subprocess.run(
            [str(where / "bin" / "pip"), "install", "-q", f"hmz=={VERSION}"],
            check=True,
            capture_output=True,
            timeout=900,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(where, ignore_errors=True)
        return None, f"installing hmz {VERSION} under Python {major}.{minor} failed: {exc}"
    if not hmz.is_file():
        return None, f"hmz {VERSION} installed under Python {major}.{minor} has no `hmz`"
    return hmz, f"hmz {VERSION} installed in {where} (Python {major}.{minor})"


def _fakes(tmp: Path) -> tuple[Path, Path]:
    """A bin directory whose `claude` stamps the clock, then runs the fake; the stamps file."""
    sys.path.insert(0, str(ROOT))
    from tests.agents.fakes import install_fakes

    bin_dir = install_fakes(tmp / "bin")
    (bin_dir / "claude").rename(bin_dir / "claude-fake")
    stamps = tmp / "stamps"
    wrapper = bin_dir / "claude"
    wrapper.write_text(
        f'#!/bin/sh\ndate +%s%N >> "{stamps}"\nexec "{bin_dir / "claude-fake"}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return bin_dir, stamps


class Run(NamedTuple):
    """One run seen from the agent's side: launch -> first agent ms, start-to-start gaps ms,
    the runtime's peak RSS MB (the largest of it and the processes it waited for)."""

    first_ms: float
    gaps: list[float]
    rss_mb: float


def _alive(pid: int) -> bool:
    """Whether `pid` has not exited yet (without reaping it: its usage is read after)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None


def _count(stamps: Path) -> int:
    return len(stamps.read_text().split()) if stamps.exists() else 0


def _run(argv: list[str], cwd: Path, env: dict[str, str], stamps: Path, turns: int) -> Run:
    """Run a runtime until it ends or its agents have stamped `turns` + 1 starts (then it is
    sent SIGTERM: hmz has no turn budget, only a duration)."""
    t0 = time.time_ns()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while _alive(proc.pid) and _count(stamps) <= turns:
            time.sleep(0.02)
    except BaseException:  # the bench is stopped: the runtime must not outlive it
        proc.terminate()
        proc.wait()
        raise
    if _alive(proc.pid):
        proc.terminate()
    _, status, usage = os.wait4(proc.pid, 0)  # reaped here, with its usage
    proc.returncode = os.waitstatus_to_exitcode(status)
    got = [int(x) for x in stamps.read_text().split()] if stamps.exists() else []
    if not got:
        raise RuntimeError(f"{Path(argv[0]).name} started no agent (exit {proc.returncode})")
    got = got[:turns]
    gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(got)]
    return Run((got[0] - t0) / 1e6, gaps, usage.ru_maxrss / 1024)


def _env(tmp: Path, bin_dir: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_")}
    return {
        **base,
        "PATH": f"{bin_dir}{os.pathsep}{base.get('PATH', '')}",
        "FAKE_STATE_DIR": str(tmp / "fake-state"),
    }


def _workspace(tmp: Path) -> Path:
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("bench\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def flamechase_run(turns: int) -> Run:
    """A flamechase flame_chase run of `turns` turns (jail off: hmz runs its agents unjailed)."""
    with tempfile.TemporaryDirectory(prefix="fc-bench-fc-") as d:
        tmp = Path(d)
        bin_dir, stamps = _fakes(tmp)
        env = {**_env(tmp, bin_dir), "FLAMECHASE_HOME": str(tmp / "home")}
        argv = [sys.executable, "-m", "flamechase", "exec", "-f", "flame_chase"]
        argv += ["-a", "first_chaser=claude/sonnet", "-a", "second_chaser=claude/sonnet"]
        argv += ["-p", f"budget.turns={turns},rest_seconds=0.05,sandbox=off", "bench"]
        return _run(argv, _workspace(tmp), env, stamps, turns)


def hmz_run(hmz: Path, turns: int) -> Run:
    """The same of hmz's flame_chase: it has no turn budget, so a duration long enough for
    `turns` turns, cut short once its agents have started them."""
    with tempfile.TemporaryDirectory(prefix="fc-bench-hmz-") as d:
        tmp = Path(d)
        bin_dir, stamps = _fakes(tmp)
        # Its epics and settings go under HOME: a fresh one for every run.
        env = {**_env(tmp, bin_dir), "HOME": str(tmp / "home")}
        seconds = 60 + 2 * turns  # a safety net: the run is cut once it has the turns
        argv = [str(hmz), "exec", "-f", "flame_chase"]
        argv += ["-a", "first_chaser=claude/sonnet,second_chaser=claude/sonnet"]
        argv += ["-p", f"budget.duration={seconds}", "--json", "bench"]
        run = _run(argv, _workspace(tmp), env, stamps, turns)
        if len(run.gaps) < 2:
            raise RuntimeError(f"hmz ran {len(run.gaps) + 1} turns in {seconds} s")
        return run
