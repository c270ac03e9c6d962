"""Lanes: parallel_flame_chase at 1, 3 and 8 lanes against as many bare spawn loops side by
side, and what a 3-lane run writes against its floor (its two private lanes' copies), with
and without an evaluator measuring submissions.

Bytes written are the kernel's count of bytes the run and its children dirtied for storage
(wait4's ru_oublock, 512-byte units): a file written and removed before it reached the disk
counts, as it should (it was written); 0 where nothing reaches storage (tmpfs).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import threading
from pathlib import Path

from bench.common import PROGRESS, PY, Figure, Stamps, allocated, exec_usage, make_actor


def plan(lanes: int) -> str:
    brief = {"title": "t", "objective": "o", "success_criteria": ["c"]}
    return json.dumps(
        {"lanes": [{"lane": f"lane-{n}", "mission": brief} for n in range(1, lanes + 1)]}
    )


def _exec(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Run flamechase; the MB it and its children wrote."""
    usage = exec_usage(argv, cwd, env, " ".join(argv[3:6]))
    return usage.ru_oublock * 512 / 1e6


def _rate(starts: list[int]) -> float:
    """Turns started per second between the first and the last start."""
    if len(starts) < 2:
        return 0.0
    return (len(starts) - 1) / ((max(starts) - min(starts)) / 1e9)


def lanes_figures(tmp: Path, rounds: int, per_lane: int, counts: tuple[int, ...]) -> list[Figure]:
    """Lane turns/s at each lane count (`per_lane` turns a lane), against that many bare
    spawn loops run side by side (one thread each, the same agent, no rest)."""
    stamps = Stamps(tmp / "lanes.fifo")
    env = dict(os.environ, STAMPS=str(stamps.path))
    out = []
    for n in counts:
        actor = make_actor(tmp / f"actor-{n}.sh", PROGRESS, plan(n))

        def flamechase(n: int = n, actor: Path = actor) -> float:
            ws = tmp / f"lanes{n}-ws"
            ws.mkdir(exist_ok=True)
            (ws / "README.md").write_text("bench\n")
            home = tmp / f"lanes{n}-home"
            argv = [PY, "-m", "flamechase", "exec", "-f", "parallel_flame_chase"]
            argv += [*(["-a", f"exec:{actor}"] * (1 + 2 * n))]
            argv += ["-p", f"lanes={n},budget.turns={n * per_lane},rest_seconds=0.05,sandbox=off"]
            stamps.read()
            _exec([*argv, "bench"], ws, dict(env, FLAMECHASE_HOME=str(home)))
            shutil.rmtree(home, ignore_errors=True)
            shutil.rmtree(ws, ignore_errors=True)
            return _rate([ns for lane, ns in stamps.read() if lane])

        def bare(n: int = n, actor: Path = actor) -> float:
            report = tmp / "bare-report.json"
            benv = dict(env, FLAMECHASE_LANE="lane-1", FLAMECHASE_REPORT=str(report))

            def loop() -> None:
                for _ in range(per_lane):
                    subprocess.run([str(actor)], env=benv, check=True)

            stamps.read()
            threads = [threading.Thread(target=loop) for _ in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return _rate([ns for _, ns in stamps.read()])

        bare()
        xs, ys = [], []
        for _ in range(rounds):
            xs.append(flamechase())
            ys.append(bare())
        out.append(
            Figure(
                f"lane turns/s, parallel_flame_chase, {n} lane{'s' if n > 1 else ''} "
                f"x {per_lane} turns (50 ms rest a turn)",
                "/s",
                xs,
                f"{n} bare spawn loop{'s' if n > 1 else ''} side by side",
                ys,
                f"lanes-{n}",
            )
        )
    stamps.close()
    return out


EVAL_BODY = """  for f in f0.bin f1.bin; do echo "$FLAMECHASE_LANE $FLAMECHASE_TURN" >> "$f"; done
  echo "SCORE: $FLAMECHASE_TURN" > score.txt
  mkdir -p "$FLAMECHASE_ARTIFACTS"; echo "$FLAMECHASE_TURN" > "$FLAMECHASE_ARTIFACTS/patch.txt"
"""
SUBMIT = json.dumps(
    {
        "status": "deliverable_ready",
        "summary": "a candidate",
        "deliverable": {
            "title": "candidate",
            "artifacts": [{"path": "patch.txt"}],
            "integration_notes": "lay it over",
        },
        "submission": {
            "title": "candidate",
            "metric": "score",
            "value": 1,
            "direction": "maximize",
            "evaluator": "cat score.txt",
        },
    }
)


def _submissions(home: Path) -> int:
    n = 0
    for db in home.glob("runs/*/run.db"):
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            n += conn.execute(
                "SELECT COUNT(*) FROM events WHERE kind = 'candidate_submitted'"
            ).fetchone()[0]
    return n


def lanes3_bytes(base: Path, rounds: int, mb: int, where: str) -> list[Figure]:
    """MB a 3-lane run writes and keeps (du of its state home at the end) against the two
    private lanes' copies; then the same with an evaluator measuring 6 submissions (each
    lane turn changes 3 files and submits). `base`: a directory on the file system measured."""
    stamps = Stamps(base / "lanes3.fifo")
    plain = make_actor(base / "actor3.sh", PROGRESS, plan(3))
    submit = make_actor(base / "actor3e.sh", SUBMIT, plan(3), EVAL_BODY)
    cols: dict[str, list[float]] = {}
    subs: list[int] = []
    for r in range(rounds):
        for kind, actor, extra in (
            ("plain", plain, []),
            ("eval", submit, ["-p", "evaluator=cat score.txt"]),
        ):
            ws = base / f"lanes3-{kind}-{r}"
            ws.mkdir()
            for i in range(100):
                (ws / f"f{i}.bin").write_bytes(os.urandom(mb * 10_000))
            (ws / "score.txt").write_text("SCORE: 0\n")
            home = base / f"home3-{kind}-{r}"
            argv = [PY, "-m", "flamechase", "exec", "-f", "parallel_flame_chase"]
            argv += [*(["-a", f"exec:{actor}"] * 7), *extra]
            argv += ["-p", "budget.turns=6,rest_seconds=0.05,sandbox=off", "bench"]
            env = dict(os.environ, FLAMECHASE_HOME=str(home), STAMPS=str(stamps.path))
            cols.setdefault(f"{kind}-written", []).append(_exec(argv, ws, env))
            stamps.read()
            cols.setdefault(f"{kind}-kept", []).append(allocated(home))
            cols.setdefault(f"{kind}-floor", []).append(2 * allocated(ws))
            if kind == "eval":
                subs.append(_submissions(home))
            shutil.rmtree(home, ignore_errors=True)
            shutil.rmtree(ws, ignore_errors=True)
    stamps.close()
    what = f"3-lane run, {mb} MB tree, {where}"
    floor = "2 private lanes' copies"
    nsubs = statistics.median(subs) if subs else 0
    return [
        Figure(f"{what}: MB written", "MB", cols["plain-written"], floor, cols["plain-floor"]),
        Figure(f"{what}: MB kept at the end", "MB", cols["plain-kept"], floor, cols["plain-floor"]),
        Figure(
            f"{what}, evaluator, {nsubs:.0f} submissions: MB written",
            "MB",
            cols["eval-written"],
            floor,
            cols["eval-floor"],
            f"lanes3-eval-{where}",
        ),
        Figure(
            f"{what}, evaluator, {nsubs:.0f} submissions: MB kept at the end",
            "MB",
            cols["eval-kept"],
            floor,
            cols["eval-floor"],
        ),
    ]
