"""Background jobs an agent starts and waits for without spending tokens (`flamechase job`).

A job is a directory `<jobs>/<id>/` holding `job.json` (argv, cwd, name, timeout, start time,
the PID namespace it runs in), `out.log` (stdout and stderr, kept), `pid` and, once it ended,
`end.json` ({rc, state, ended}) written atomically by its supervisor. The supervisor is a
detached process that runs the command in a process group of its own, enforces the timeout
and records how it ended: `done` (rc = the exit code), `failed`, `timeout` (rc 124),
`killed` (rc 128+N). A job whose processes are gone without an `end.json` reads `lost`:
its turn ended and the jail took it along (a job never outlives the turn that started it
when the turn is jailed); `reap` records such jobs as `reaped` and ends any still running.
Nothing ever re-runs a job.

Where jobs live: `--dir`, else `$FLAMECHASE_JOBS`, else `$FLAMECHASE_RUN_DIR/lanes/
$FLAMECHASE_LANE/jobs` (a lane's own directory, writable from its turns and the runtime's
programs), else an error that says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flamechase.errors import MachineWorkError
from flamechase.fsutil import atomic_write
from flamechase.interpreter import runtime_module

__all__ = ["JobError", "jobs_dir", "kill", "listing", "logs", "reap", "start", "state", "wait"]

KILL_GRACE = 5.0
WAIT_TIMEOUT = 124  # `wait --max` ran out: the job goes on


class JobError(MachineWorkError):
    """A job command that cannot be done (no job directory, no such job): one line."""


def jobs_dir(given: str | None, env: Mapping[str, str]) -> Path:
    if given:
        return Path(given)
    if env.get("FLAMECHASE_JOBS"):
        return Path(env["FLAMECHASE_JOBS"])
    run, lane = env.get("FLAMECHASE_RUN_DIR"), env.get("FLAMECHASE_LANE")
    if run and lane:
        return Path(run) / "lanes" / lane / "jobs"
    raise JobError(
        "no job directory: run inside a flamechase turn, set FLAMECHASE_JOBS or pass --dir"
    )


def pid_ns() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _write(path: Path, value: Any) -> None:
    atomic_write(path, (json.dumps(value, sort_keys=True) + "\n").encode(), mode=0o644)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _job(root: Path, job_id: str) -> Path:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", job_id) or not (root / job_id / "job.json").is_file():
        raise JobError(f"no job {job_id!r} in {root}; `flamechase job list` shows them")
    return root / job_id


def start(
    root: Path,
    argv: Sequence[str],
    *,
    name: str = "job",
    timeout: float = 0.0,
    cwd: Path | None = None,
) -> str:
    """Start `argv` in the background; its id, once its supervisor runs it."""
    if not argv:
        raise JobError("job start needs a command after --")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)[:40] or "job"
    root.mkdir(parents=True, exist_ok=True)
    n = 1 + sum(1 for _ in root.iterdir())
    while True:
        job_id = f"{slug}-{n}"
        try:
            (root / job_id).mkdir()
            break
        except FileExistsError:
            n += 1
    d = root / job_id
    _write(
        d / "job.json",
        {
            "id": job_id,
            "name": name,
            "argv": list(argv),
            "cwd": str(cwd or Path.cwd()),
            "timeout": timeout,
            "started": time.time(),
            "ns": pid_ns(),
        },
    )
    subprocess.Popen(
        [*runtime_module("flamechase.tools.jobs", "supervise", str(d))],
        cwd=str(cwd or Path.cwd()),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not (d / "pid").exists() and not (d / "end.json").exists():
        if time.monotonic() > deadline:
            raise JobError(f"job {job_id} did not start within 30 s")
        time.sleep(0.02)
    return job_id


def supervise(d: Path) -> int:
    """Run the job of `d` to its end and record how it ended (the detached supervisor)."""
    meta = _read(d / "job.json") or {}
    (d / "supervisor").write_text(str(os.getpid()))
    with open(d / "out.log", "ab") as log:
        try:
            proc = subprocess.Popen(
                meta["argv"],
                cwd=meta.get("cwd"),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            log.write(f"cannot start: {exc}\n".encode())
            _write(d / "end.json", {"rc": 127, "state": "failed", "ended": time.time()})
            return 127
    (d / "pid").write_text(str(proc.pid))
    limit = float(meta.get("timeout") or 0) or None
    timed_out = False
    try:
        rc = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        timed_out = True
        _end_group(proc.pid)
        rc = proc.wait()
    if rc < 0:
        rc = 128 - rc
    if timed_out:
        what = "timeout"
        rc = 124
    elif (d / "kill").exists():
        what = "killed"
    else:
        what = "done" if rc == 0 else "failed"
    _write(d / "end.json", {"rc": rc, "state": what, "ended": time.time()})
    return 0


def _end_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _alive(d: Path, meta: Mapping[str, Any]) -> bool:
    """Whether the job's process still runs, as seen from here (another PID namespace, i.e.
    another turn's jail, cannot see it: it ended with that turn)."""
    if meta.get("ns") != pid_ns():
        return False
    for name in ("supervisor", "pid"):
        try:
            pid = int((d / name).read_text())
            os.kill(pid, 0)
        except (OSError, ValueError):
            continue
        if not _zombie(pid):
            return True
    return False


def _zombie(pid: int) -> bool:
    """A process that exited and waits for a parent to collect it (it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def state(d: Path) -> dict[str, Any]:
    meta = _read(d / "job.json") or {}
    end = _read(d / "end.json")
    row = {
        "id": d.name,
        "name": meta.get("name"),
        "argv": meta.get("argv"),
        "started": meta.get("started"),
        "log": str(d / "out.log"),
        "rc": None,
        "ended": None,
        "state": "running",
    }
    if end:
        row.update(rc=end.get("rc"), ended=end.get("ended"), state=end.get("state"))
    elif not _alive(d, meta):
        row["state"] = "lost"
    return row


def listing(root: Path) -> list[dict[str, Any]]:
    if not root.is_dir():
        return []
    rows = [state(d) for d in root.iterdir() if (d / "job.json").is_file()]
    return sorted(rows, key=lambda r: (r.get("started") or 0, r["id"]))


def wait(root: Path, job_id: str, max_seconds: float) -> dict[str, Any]:
    """The job's state once it ended, or after `max_seconds` (then still `running`)."""
    d = _job(root, job_id)
    deadline = time.monotonic() + max_seconds
    while True:
        row = state(d)
        if row["state"] != "running" or time.monotonic() >= deadline:
            return row
        time.sleep(0.05)


def kill(root: Path, job_id: str) -> dict[str, Any]:
    d = _job(root, job_id)
    row = state(d)
    if row["state"] == "running":
        (d / "kill").write_text("")
        _end_group(int((d / "pid").read_text()))
        deadline = time.monotonic() + KILL_GRACE + 5
        while not (d / "end.json").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return state(d)
    return row


def reap(root: Path) -> dict[str, Any]:
    """End every job still running; record jobs that ended with their turn as `reaped`."""
    ended, reaped = [], []
    for row in listing(root):
        d = root / row["id"]
        if row["state"] == "running":
            kill(root, row["id"])
            ended.append(row["id"])
        elif row["state"] == "lost":
            _write(d / "end.json", {"rc": None, "state": "reaped", "ended": time.time()})
            reaped.append(row["id"])
    return {"killed": ended, "reaped": reaped, "jobs": len(listing(root))}


def logs(root: Path, job_id: str, lines: int) -> str:
    d = _job(root, job_id)
    try:
        text = (d / "out.log").read_bytes()[-(1 << 20) :].decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 2 and args[0] == "supervise":
        return supervise(Path(args[1]))
    print(
        "usage: python -m flamechase.tools.jobs supervise DIR (use `flamechase job`)",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
