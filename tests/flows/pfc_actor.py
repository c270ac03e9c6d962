#!/usr/bin/env python3
"""Shared `exec:` actor for the parallel_flame_chase tests (copied next to each test's files).

Every run appends one JSON line to a log (role, lane, turn, attempt, cwd, repair reason, what
the inbox held, ...). What it then does is decided by `hook.py` beside this script, if there is
one: `act(c)` (lane actors) or `plan(c)` (the coordinator) gets a context `c` and returns

* None: the default (the coordinator writes a valid plan; a lane writes a progress report);
* a dict or list: written as JSON to $FLAMECHASE_REPORT;
* a str: written as is (e.g. "not json");
* c.SKIP: nothing is written.

`sys.exit(n)` in the hook ends the program with that code.

Every agent runs jailed (it can write only its place and its own run directory), so each
lane keeps its log, flags and saved files in `<run>/lanes/<lane>/pfc/` (its "scratch") and
the coordinator in `<run>/planning/<n>/pfc/`. Everyone can read everything.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
E = os.environ
RUN_DIR = Path(E.get("FLAMECHASE_RUN_DIR", str(HERE)))


def scratch_dirs() -> list[Path]:
    return [HERE, *sorted(RUN_DIR.glob("planning/*/pfc")), *sorted(RUN_DIR.glob("lanes/*/pfc"))]


def _entries() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for d in scratch_dirs():
        log = d / "log.jsonl"
        if log.exists():
            out += [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    return sorted(out, key=lambda e: e["t"])


class Ctx:
    SKIP = object()

    def __init__(self) -> None:
        self.role = E.get("FLAMECHASE_ROLE", "")
        self.lane = E.get("FLAMECHASE_LANE", "")
        self.turn = int(E.get("FLAMECHASE_TURN", "0"))
        self.attempt = int(E.get("FLAMECHASE_ATTEMPT", "0"))
        self.repair = E.get("FLAMECHASE_REPAIR")
        self.run_id = E.get("FLAMECHASE_RUN_ID", "")
        self.ws = Path.cwd()
        self.here = HERE
        self.report_path = Path(E["FLAMECHASE_REPORT"])
        self.art = Path(E["FLAMECHASE_ARTIFACTS"]) if E.get("FLAMECHASE_ARTIFACTS") else None
        self.ckpt = Path(E["FLAMECHASE_CHECKPOINT"]) if E.get("FLAMECHASE_CHECKPOINT") else None
        self.lanes = [x for x in E.get("FLAMECHASE_LANES", "").split(",") if x]
        self.inbox: list[dict[str, Any]] = []
        if E.get("FLAMECHASE_INBOX"):
            self.inbox = json.loads(Path(E["FLAMECHASE_INBOX"]).read_text())
        self.prompt = Path(E["FLAMECHASE_PROMPT"]).read_text() if E.get("FLAMECHASE_PROMPT") else ""
        self.actor = "b" if self.role.endswith("_b") else "a"
        if self.lane and self.art is not None:
            self.scratch = self.art.parent / "pfc"
        else:  # the coordinator: its report is in <run>/planning/<n>/attempts/<k>/
            self.scratch = self.report_path.parent.parent.parent / "pfc"
        self.scratch.mkdir(exist_ok=True)

    # -- building results -------------------------------------------------------------
    def plan(self, lanes: list[str] | None = None) -> dict[str, Any]:
        names = self.lanes if lanes is None else lanes
        return {
            "lanes": [
                {
                    "lane": n,
                    "mission": {
                        "title": f"mission of {n}",
                        "objective": f"explore direction {n}",
                        "success_criteria": [f"{n} reports evidence"],
                    },
                }
                for n in names
            ]
        }

    def ok(self, status: str = "progress", summary: str | None = None, **kw: Any) -> dict[str, Any]:
        return {
            "status": status,
            "summary": summary or f"{self.role} turn {self.turn} attempt {self.attempt}",
            **kw,
        }

    def deliver(
        self,
        files: dict[str, str | bytes] | None = None,
        paths: list[str] | None = None,
        submission: dict[str, Any] | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        """Write `files` under the artifact root; a deliverable_ready report listing `paths`."""
        assert self.art is not None
        for rel, content in (files or {}).items():
            p = self.art / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content)
        listed = list(files or {}) if paths is None else paths
        deliverable = {
            "title": f"package of {self.lane} turn {self.turn}",
            "artifacts": [{"path": p, "description": f"file {p}"} for p in listed],
            "integration_notes": "copy the files into the source and run tests",
        }
        return self.ok("deliverable_ready", deliverable=deliverable, submission=submission, **kw)

    def checkpoint(self, report: dict[str, Any], **identity: Any) -> None:
        assert self.ckpt is not None
        ident = {
            "run_id": self.run_id,
            "lane": self.lane,
            "turn": self.turn,
            "attempt": self.attempt,
            "phase": "terminal",
            **identity,
        }
        self.ckpt.write_text(json.dumps({"identity": ident, "report": report}))

    # -- coordination ------------------------------------------------------------------
    def log(self) -> list[dict[str, Any]]:
        return _entries()

    def wait(self, pred: Any, timeout: float = 20.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred(_entries()):
                return True
            time.sleep(0.02)
        return False

    def started(self, lane: str, turn: int) -> bool:
        return any(e["lane"] == lane and e["turn"] >= turn for e in _entries())

    def save(self, name: str, text: str) -> None:
        """Leave a file for the test (`Team.saved(name)`) or for other actors (`flag`)."""
        (self.scratch / name).write_text(text)

    def flag(self, name: str) -> bool:
        return any((d / name).exists() for d in scratch_dirs())

    def once(self, name: str) -> bool:
        """True the first time any actor of this lane (or the coordinator) asks."""
        try:
            os.close(os.open(self.scratch / f"once-{name}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True


def _process_id() -> str:
    """This process among all: a jailed one is pid 2 of its own PID namespace, and namespace
    numbers are reused, so the namespace, the pid and the start time (ticks since boot)."""
    started = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]
    return f"{os.readlink('/proc/self/ns/pid')}/{os.getpid()}@{started}"


def _record(c: Ctx) -> None:
    entry = {
        "script": Path(sys.argv[0]).name,
        "role": c.role,
        "lane": c.lane,
        "turn": c.turn,
        "attempt": c.attempt,
        "repair": c.repair,
        "cwd": str(c.ws),
        "pid": _process_id(),
        "workspace": E.get("FLAMECHASE_WORKSPACE"),
        "artifacts": E.get("FLAMECHASE_ARTIFACTS"),
        "checkpoint": E.get("FLAMECHASE_CHECKPOINT"),
        "lanes": E.get("FLAMECHASE_LANES"),
        "prompt": E.get("FLAMECHASE_PROMPT"),
        "run_id": c.run_id,
        "inbox": [
            {
                "id": d.get("report_id"),
                "lane": d.get("lane"),
                "status": d.get("report", {}).get("status"),
                "stub": bool(d.get("stub")),
            }
            for d in c.inbox
        ],
        "t": time.time(),
    }
    if not c.lane:  # what the planner saw (its snapshot is removed once it has planned)
        entry["listing"] = sorted(os.listdir(c.ws))
        task = c.ws / "TASK.md"
        entry["task_md"] = task.read_text() if task.is_file() else None
    with open(c.scratch / "log.jsonl", "ab") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write((json.dumps(entry) + "\n").encode())
        f.flush()
        fcntl.flock(f, fcntl.LOCK_UN)


def main() -> None:
    c = Ctx()
    _record(c)
    result: Any = None
    hook = HERE / "hook.py"
    if hook.exists():
        ns: dict[str, Any] = {"__name__": "hook"}
        exec(compile(hook.read_text(), str(hook), "exec"), ns)
        fn = ns.get("plan" if c.role == "coordinator" else "act")
        if fn is not None:
            result = fn(c)
    if result is Ctx.SKIP:
        return
    if result is None:
        result = c.plan() if c.role == "coordinator" else c.ok()
    text = result if isinstance(result, str) else json.dumps(result)
    c.report_path.write_text(text)


if __name__ == "__main__":
    main()
