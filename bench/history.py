"""What resume and `status` cost at 100 and at 10,000 turns (and as many events): the slope.

The runs are made cheaply by writing rows straight through the store's own writer (one turn
row and one event per turn, lanes and a flow state as a real run leaves them), then timed
in this interpreter, interleaved: `run_status` (what `flamechase status --json` prints,
without the flow's panels, which fold the flow's own events), and the database reads a
resume makes (opening.load, budget_of, recover, Checks.of_run) without starting anything.
A ratio near x1 is a cost that does not grow with the run's history.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

REPEAT = 20  # calls per timed sample: one call is well under a millisecond


def make_run(root: Path, turns: int) -> Path:
    """A finished 2-lane run of `turns` turn rows and as many events, in `root`."""
    from flamechase.budgets import Budget
    from flamechase.store.db import Writer

    root.mkdir(parents=True, exist_ok=True)
    w = Writer(root / "run.db")
    w.create_run(
        run_id="bench-" + str(turns),
        flow="flame_chase",
        workspace=str(root),
        task="bench",
        fingerprint="x",
        params={},
        budget=Budget().to_json(),
        agents={},
        run_dir=str(root),
    )
    with w.transaction(durable=False):
        for pos, lane in enumerate(("a", "b")):
            w.add_lane(lane, pos, ["coder"], str(root))
        w.event("run_created", payload={})
        for n in range(turns):
            lane = "ab"[n % 2]
            w.insert_turn(
                lane=lane,
                number=n // 2 + 1,
                attempt=1,
                role="coder",
                backend="fake",
                status="valid" if n % 50 else "interrupted",
                started="2026-01-01T00:00:00Z",
                ended="2026-01-01T00:00:01Z",
                duration=1.0,
                report={"status": "progress", "summary": "a turn's report " * 8},
                cost_usd=0.01,
                output_tokens=100,
                input_tokens=1000,
            )
            w.event("turn_valid", lane=lane, actor="coder", payload={"turn": n // 2 + 1})
        w.save_flow_state(flow="flame_chase", state="{}", summary={}, seq=turns + 1)
        w.update_run(status="finished")
    w.close()
    return root


def status_ms(run_dir: Path) -> Callable[[], float]:
    from flamechase.cli.runs import run_status

    def run() -> float:
        t0 = time.perf_counter()
        for _ in range(REPEAT):
            run_status(run_dir)
        return (time.perf_counter() - t0) * 1000 / REPEAT

    return run


def resume_reads(run_dir: Path) -> None:
    """The reads a resumed run makes of its database before its loop starts."""
    from flamechase.engine.checks import Checks
    from flamechase.store.reader import Reader

    with Reader(run_dir / "run.db") as r:
        r.run()
        r.flow_state()
        r.lanes()
        r.spend()
        r.owed_retakes()
        r.procs()
        r.inflight()
        Checks.of_run("flame_chase", ["coder"], ["a", "b"], r)


def resume_ms(run_dir: Path) -> Callable[[], float]:
    def run() -> float:
        t0 = time.perf_counter()
        for _ in range(REPEAT):
            resume_reads(run_dir)
        return (time.perf_counter() - t0) * 1000 / REPEAT

    return run


# What each turn left before engine/turnfiles.py settled them, measured with the same runs
# (flame_chase, the bench's exec agent, jail off) on 2026-12-02 from main at 80a5bc8.
BEFORE_TURN_FILES = "16.0 KB allocated, 1,065 B of content"


def turn_files(home: Path) -> str:
    """What the runs under FLAMECHASE_HOME `home` left per turn under lanes/*/turns."""
    dirs = [d for d in home.glob("runs/*/lanes/*/turns/*") if d.is_dir()]
    if not dirs:
        return "files a turn leaves under lanes/*/turns: no turn directory found"
    files = [f for d in dirs for f in d.iterdir() if f.is_file()]
    allocated = sum(p.lstat().st_blocks * 512 for p in [*dirs, *files])
    content = sum(f.lstat().st_size for f in files)
    return (
        f"files a turn leaves under lanes/*/turns ({len(dirs)} turns of flame_chase, exec "
        f"agent): {allocated / len(dirs) / 1024:.1f} KB allocated, {content / len(dirs):,.0f} B "
        f"of content, its directory included; before they were settled "
        f"(engine/turnfiles.py): {BEFORE_TURN_FILES}"
    )
