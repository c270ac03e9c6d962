#!/usr/bin/env python3
"""Scripted `exec:` actor for the parallel_flame_chase:git_pr tests (copied next to each test).

The coordinator writes a plan. A lane actor runs `hook.py`'s `act(c)` (beside this script) with
a context `c`, then writes a progress report whose summary is what `act` returned. Everything
a lane does goes through its own clone, git and `flamechase pr`, as an agent would; each step
is logged as a JSON line in the lane's own directory (`<run>/lanes/LANE/actor-log.jsonl`, the
only place besides its clone a jailed lane may write), readable by the test and other lanes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
E = os.environ
RUN = Path(E.get("FLAMECHASE_RUN_DIR", str(HERE)))


class Ctx:
    def __init__(self) -> None:
        self.lane = E.get("FLAMECHASE_LANE", "")
        self.turn = int(E.get("FLAMECHASE_TURN", "0"))
        self.role = E.get("FLAMECHASE_ROLE", "")
        self.ws = Path.cwd()
        self.run = RUN
        self.inbox: list[dict[str, Any]] = (
            json.loads(Path(E["FLAMECHASE_INBOX"]).read_text()) if E.get("FLAMECHASE_INBOX") else []
        )
        self.log_path = RUN / "lanes" / self.lane / "actor-log.jsonl"

    def log(self, **fields: Any) -> None:
        line = json.dumps({"lane": self.lane, "turn": self.turn, **fields}) + "\n"
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(line)

    def sh(
        self, *argv: str, check: bool = True, quiet: bool = False
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(list(argv), capture_output=True, text=True, check=False)
        if not quiet:
            self.log(
                cmd=list(argv),
                code=proc.returncode,
                out=proc.stdout[-2000:],
                err=proc.stderr[-2000:],
            )
        if check and proc.returncode != 0:
            raise SystemExit(f"{argv}: {proc.stderr}")
        return proc

    def git(
        self, *args: str, check: bool = True, quiet: bool = False
    ) -> subprocess.CompletedProcess[str]:
        return self.sh("git", *args, check=check, quiet=quiet)

    def pr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # Isolated, as the prompt tells agents: a clone may hold a `flamechase.py`.
        return self.sh(sys.executable, "-I", "-m", "flamechase", "pr", *args, check=check)

    def change(
        self,
        branch: str,
        files: dict[str, str],
        start: str = "origin/main",
        message: str = "a change",
    ) -> str:
        """A commit of `files` on a new `branch` from `start`; its sha."""
        self.git("fetch", "-q", "origin")
        self.git("checkout", "-q", "-f", "-B", branch, start)
        for name, text in files.items():
            (self.ws / name).parent.mkdir(parents=True, exist_ok=True)
            (self.ws / name).write_text(text)
        self.git("add", "-A")
        self.git("commit", "-qm", message)
        return self.git("rev-parse", "HEAD").stdout.strip()

    def propose(self, branch: str, files: dict[str, str], start: str = "origin/main") -> None:
        self.change(branch, files, start)
        self.git("push", "-q", "origin", branch)
        self.pr("open", "--title", f"{branch}: {sorted(files)}", "--hypothesis", "lower")
        self.pr("ready")

    def main(self) -> str:
        out = self.git("ls-remote", "origin", "refs/heads/main", quiet=True).stdout.split()
        return out[0] if out else ""

    def wait(self, what: str, test: Any, timeout: float = 90.0) -> None:
        """Wait until `test()` is true (the runtime or another lane did something)."""
        deadline = time.monotonic() + timeout
        while not test():
            if time.monotonic() > deadline:
                raise SystemExit(f"gave up waiting for {what}")
            time.sleep(0.1)

    def logged(self, lane: str) -> list[dict[str, Any]]:
        path = self.run / "lanes" / lane / "actor-log.jsonl"
        if not path.exists():
            return []
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]

    def done(self, lane: str, turn: int) -> bool:
        return any(e.get("done") and e["turn"] == turn for e in self.logged(lane))


def main() -> int:
    report = Path(E["FLAMECHASE_REPORT"])
    lanes = [x for x in E.get("FLAMECHASE_LANES", "").split(",") if x]
    if not E.get("FLAMECHASE_LANE"):
        plan = {
            "lanes": [
                {
                    "lane": n,
                    "mission": {
                        "title": f"mission of {n}",
                        "objective": "lower the score",
                        "success_criteria": ["merged"],
                    },
                }
                for n in lanes
            ]
        }
        report.write_text(json.dumps(plan))
        return 0
    sys.path.insert(0, str(HERE))
    import hook  # the test's script, beside this file

    c = Ctx()
    summary = hook.act(c) or "nothing to do this turn"
    c.log(done=True, inbox=[d.get("report", {}).get("summary") for d in c.inbox])
    report.write_text(json.dumps({"status": "progress", "summary": str(summary)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
