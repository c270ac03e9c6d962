"""What the pre-run warning says a start of parallel_flame_chase writes: every whole copy.

The planner's snapshot is not a copy more: once the plan is made it is dropped in the round
the first private lane's copy is asked for, and the engine brings it back to your tree in
O(changed) as that copy (`decide`, workspace/reuse). With `lane_refresh=rebase` the run's
own repository records lane 1's tree once (zlib-compressed: a whole copy for data that does
not compress). With an evaluator: the baseline, and one measurement copy, kept between
submissions (measured one at a time) and brought back to the baseline in O(changed).
"""

from __future__ import annotations


def names(private: list[str], *, rebase: bool, evaluator: bool) -> list[str]:
    """The copies of a fresh start, for lanes 2..N called `private`."""
    out = [f"planning, then {private[0]}'s copy", *private[1:]] if private else ["planning"]
    if private and rebase:
        out.append("lane 1's tree in the lane refresh's repository (its files once, zlib)")
    if evaluator:
        out += [
            "baseline",
            "a measurement copy (kept between submissions, brought back to the baseline in "
            "O(changed))",
        ]
    return out
