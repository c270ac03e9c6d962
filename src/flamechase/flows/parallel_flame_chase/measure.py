"""How parallel_flame_chase measures a submission so that a lane cannot forge its score.

At the start the runtime snapshots the source (`baseline`) and freezes the evaluator's files
(those its command names, plus the `evaluator_files` globs). A submission is measured in a
fresh copy of the baseline with the lane's changed files laid over it and the frozen files
put back (`MakePlace(how="overlay")`), never in the lane's own tree. A submission whose lane
changed a frozen file is `tampered`: recorded, never verified or ranked, and the lane is told
why in a system report (source `system:LANE`, which only that lane's turns receive).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flamechase import events as ev
from flamechase.flow import Command, DropPlace, Freeze, MakePlace, Measure, PublishReport

BASELINE = "baseline"
FROZEN = "evaluator"


def place_of(rid: str) -> str:
    return f"measure/{rid}"


def setup(
    evaluator: str,
    files: Sequence[str],
    places: Mapping[str, str],
    frozen: Mapping[str, str] | None,
) -> list[Command]:
    """What must exist before any lane works: the baseline and the frozen evaluator."""
    if BASELINE not in places:
        return [MakePlace(BASELINE, label="the baseline: your tree as the run found it")]
    if frozen is None:
        return [Freeze(FROZEN, place=BASELINE, paths=tuple(files), command=evaluator)]
    return []


def steps(
    rid: str,
    info: Mapping[str, Any],
    lane_place: str,
    places: Mapping[str, str],
    evaluator: str,
    pattern: str,
    timeout: float,
) -> list[Command]:
    """The next command for one submission under measurement."""
    place = place_of(rid)
    candidate = f"{info['lane']}'s candidate {rid}"
    if place not in places:
        return [
            MakePlace(
                place,
                how="overlay",
                base=BASELINE,
                over=lane_place,
                restore=FROZEN,
                label=f"a measurement copy of {candidate}",
            )
        ]
    return [
        Measure(
            key=rid,
            place=place,
            command=evaluator,
            pattern=pattern,
            timeout=timeout,
            lane=info["lane"],
            label=candidate,
        )
    ]


def tampered(made: ev.PlaceMade, frozen: Mapping[str, str]) -> list[str]:
    """The frozen files a candidate changed or deleted."""
    return sorted((set(made.changed) | set(made.deleted)) & set(frozen))


def system_report(rid: str, lane: str, run_id: str, at: str, files: Sequence[str]) -> Command:
    """Tell the lane why its submission was not measured."""
    summary = (
        f"Your submission {rid} was not measured: it changed the evaluator's files "
        f"({', '.join(files)}), which the runtime froze at the start of the run. "
        "Scores are measured with the frozen evaluator; submit changes that leave "
        "those files as they were."
    )
    return PublishReport(
        lane=f"system:{lane}",
        report_id=f"system.{rid}",
        kind="system",
        record={
            "report_id": f"system.{rid}",
            "run_id": run_id,
            "lane": f"system:{lane}",
            "role": "runtime",
            "at": at,
            "status": "system",
            "summary": summary,
            "changes": [],
            "evidence": [],
            "tests": [],
            "risks": [],
            "next_step": "",
            "deliverable": None,
            "submission": None,
            "artifacts": [],
        },
    )


def drop(place: str) -> DropPlace:
    return DropPlace(place)
