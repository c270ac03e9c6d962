"""Helpers for the parallel_flame_chase tests: one shared actor, a runner, log readers.

Each test gets a `Team`: the shared actor script copied into its own directory (with an
optional `hook.py` deciding what each invocation does), and `team.run(...)` driving
`flamechase exec -f parallel_flame_chase` through the real CLI with that actor in every role.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.helpers import FLAMECHASE, cli, events, status

ACTOR_SRC = Path(__file__).with_name("pfc_actor.py")
RUN_ID_RE = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{10}$")


def roles(lanes: int = 3) -> list[str]:
    out = ["coordinator"]
    for i in range(1, lanes + 1):
        out += [f"lane_{i}_actor_a", f"lane_{i}_actor_b"]
    return out


class Team:
    """The shared actor in `dir`: `hook` is the body of the lane actors' `act(c)`, `planner`
    the body of the coordinator's `plan(c)` (empty: the default behaviour)."""

    def __init__(self, dir: Path, hook: str = "", planner: str = "") -> None:
        self.dir = dir
        dir.mkdir(parents=True, exist_ok=True)
        self.actor = dir / "actor.py"
        shutil.copyfile(ACTOR_SRC, self.actor)
        self.actor.chmod(0o755)
        self.set_hook(hook, planner)

    def set_hook(self, body: str = "", planner: str = "") -> None:
        text = "import json, os, sys, time\nfrom pathlib import Path\n"
        for name, code in (("act", body), ("plan", planner)):
            if code.strip():
                text += (
                    f"\n\ndef {name}(c):\n"
                    + textwrap.indent(textwrap.dedent(code).strip("\n"), "    ")
                    + "\n"
                )
        (self.dir / "hook.py").write_text(text)

    def args(
        self,
        *params: str,
        task: str = "improve it",
        lanes: int | None = None,
        agents: list[str] | None = None,
    ) -> list[str]:
        n = lanes if lanes is not None else _lanes_in(params)
        out = ["exec", "-f", "parallel_flame_chase"]
        for spec in agents if agents is not None else [f"exec:{self.actor}"] * (1 + 2 * n):
            out += ["-a", spec]
        joined = ",".join(params)
        if "rest_seconds" not in joined:
            params = (*params, "rest_seconds=0.05")
        if "budget." not in joined:
            params = (*params, "budget.duration=60s")  # a safety net; runs end sooner
        for p in params:
            out += ["-p", p]
        return [*out, task]

    def run(
        self,
        ws: Path,
        *params: str,
        task: str = "improve it",
        lanes: int | None = None,
        agents: list[str] | None = None,
        timeout: float = 90,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return cli(
            *self.args(*params, task=task, lanes=lanes, agents=agents),
            cwd=ws,
            timeout=timeout,
            env=env,
        )

    def popen(
        self, ws: Path, *params: str, task: str = "improve it", lanes: int | None = None
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*FLAMECHASE, *self.args(*params, task=task, lanes=lanes)],
            cwd=ws,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )

    def _scratch(self) -> list[Path]:
        """Where actors leave files: this directory and every lane's (and planning copy's)
        `pfc/` of every run."""
        home = Path(os.environ["FLAMECHASE_HOME"])
        return [
            self.dir,
            *sorted(home.glob("runs/*/planning/*/pfc")),
            *sorted(home.glob("runs/*/lanes/*/pfc")),
        ]

    def log(self) -> list[dict[str, Any]]:
        """Every actor invocation of every run, in start order."""
        out: list[dict[str, Any]] = []
        for d in self._scratch():
            path = d / "log.jsonl"
            if path.exists():
                out += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        return sorted(out, key=lambda e: e["t"])

    def saved(self, name: str) -> str:
        """The text an actor left with `c.save(name, ...)`."""
        found = [d / name for d in self._scratch() if (d / name).exists()]
        assert len(found) == 1, f"{name}: {found}"
        return found[0].read_text()

    def has(self, name: str) -> bool:
        return any((d / name).exists() for d in self._scratch())

    def set_flag(self, name: str) -> None:
        (self.dir / name).write_text("")

    def lane_log(self, lane: str, *, repairs: bool = False) -> list[dict[str, Any]]:
        """Invocations in `lane` (first asks only unless `repairs`), in start order."""
        return [e for e in self.log() if e["lane"] == lane and (repairs or not e["repair"])]

    def coordinator_log(self) -> list[dict[str, Any]]:
        return [e for e in self.log() if e["role"] == "coordinator"]


def _lanes_in(params: Iterable[str]) -> int:
    for chunk in params:
        for kv in chunk.split(","):
            if kv.strip().startswith("lanes="):
                return int(kv.split("=", 1)[1])
    return 3


def turn_events(evs: list[dict[str, Any]], lane: str | None = None) -> list[dict[str, Any]]:
    """Lane turns' turn_valid/turn_failed events of `evs` (in order), optionally of one lane
    (planning sessions, turns outside lanes, are `plan_attempt`s)."""
    return [
        e
        for e in evs
        if e["kind"] in ("turn_valid", "turn_failed")
        and e["lane"]
        and (lane is None or e["lane"] == lane)
    ]


def of_kind(evs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in evs if e["kind"] == kind]


def lane_of(st: dict[str, Any], lane: str) -> dict[str, Any]:
    """One lane's entry of a `status --json` result."""
    return next(ln for ln in st["lanes"] if ln["lane"] == lane)


def run_dir(state_home: Path, ws: Path) -> Path:
    run_id: str = status(ws)["id"]
    return state_home / "runs" / run_id


def db_rows(state_home: Path, ws: Path, sql: str) -> list[sqlite3.Row]:
    """Read-only look into the run database (for what no command shows, e.g. receipts)."""
    con = sqlite3.connect(f"file:{run_dir(state_home, ws) / 'run.db'}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return list(con.execute(sql))
    finally:
        con.close()


def check_delivery(team: Team, ws: Path) -> None:
    """Invariants of report delivery over a whole run, from the actors' own inbox files.

    A lane never receives its own reports; a report is never delivered again after a valid
    turn of the consumer received it; a batch received by a failed turn comes again in the
    consumer's next turn.
    """
    outcome: dict[tuple[str, int, int], str] = {}
    for e in turn_events(events(ws)):
        outcome[(e["lane"], e["payload"]["turn"], e["payload"]["attempt"])] = e["kind"]
    lanes = {e["lane"] for e in team.log() if e["lane"]}
    for lane in lanes:
        acked: set[str] = set()
        pending: set[str] = set()
        for e in team.lane_log(lane):
            got = {d["id"] for d in e["inbox"]}
            assert all(d["lane"] != lane for d in e["inbox"]), f"{lane} got its own report"
            assert not got & acked, f"{lane} turn {e['turn']} got acknowledged reports again"
            kind = outcome.get((lane, e["turn"], e["attempt"]))
            if kind is None:
                continue  # cut or still running: says nothing
            assert pending <= got, f"{lane} turn {e['turn']} lost redelivered {pending - got}"
            if kind == "turn_valid":
                acked |= got
                pending = set()
            else:
                pending = got
