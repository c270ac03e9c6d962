"""The simulated lane actor on the bundled sample, shared by the flows whose lanes end with the
turn report (flame_chase, parallel_flame_chase and its git_pr variant; parrallello's builders
climb the same ladder).

Not a flow: a library of simulated work, used through each flow's `Flow.simulator()` and
never by a real run. On the bundled sample (`flamechase/sample`: a prime counter whose
`bench.py` prints `STEPS: <int>`) the actor edits `solver.py` along a known ladder of
versions (`ladder`), runs the sample's tests and bench as the turn's own processes (`checks`),
publishes each measured improvement as an artifact package with a submission, and lets an
integrating lane take other lanes' packages after checking their hashes and measuring them
(`inbox`), all in `actor`. Every STEPS figure in its reports was printed by a bench run during
that turn. On any other tree it leaves the turn to the `sim` backend's own answer.
Must not import `agents`: what it runs, it runs through the turn's runner.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["EVALUATOR", "METRIC", "METRIC_PATTERN", "is_sample"]

EVALUATOR = "python bench.py"
METRIC_PATTERN = r"STEPS: (\d+)"
METRIC = "steps"


def is_sample(ws: Path) -> bool:
    """`ws` is (a copy of) the bundled sample: the tree the simulated actor really works on."""
    return (ws / "bench.py").is_file() and (ws / "solver.py").is_file()
