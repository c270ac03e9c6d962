"""The run's git layout, made once at the start (and finished after a crash):

    central          a bare repository: main = the baseline commit of the source, and the
                     pre-receive hook; lanes read it, only the runtime writes it (through the hook)
    lanes/LANE       each lane's clone, where its actors work; `git push origin` lands in an
                     outbox inside it, which the runtime forwards after each turn
    integration      the runtime's own clone, where it merges PRs into main
    checkouts/main   a clean checkout of the baseline: the evaluator's files are frozen from
                     it (those its command names, and `evaluator_files`), then it is
                     measured: what candidates must beat

Each step is a runtime program with a fixed key, done once: the state records it done.
"""

from __future__ import annotations

from typing import Any

from flamechase import events as ev
from flamechase.flow import Command, Emit, FinishRun, Freeze, MakePlace, Measure, Run
from flamechase.flows.git_pr import events as gev
from flamechase.flows.git_pr import jobs, programs
from flamechase.flows.git_pr.model import (
    CENTRAL,
    INTEGRATION,
    GitState,
    lane_place,
    place_label,
    result_of,
)
from flamechase.flows.parallel_flame_chase import events as pev

__all__ = ["commands", "on_frozen", "on_result", "places"]

MAIN_CHECKOUT = "checkouts/main"
FREEZE = "setup/evaluator"
SETUP_TIMEOUT = 3600.0  # seeding the central repository reads the whole source


def places(state: GitState) -> list[str]:
    return [CENTRAL, INTEGRATION, MAIN_CHECKOUT, *(lane_place(n) for n in state.book.lanes)]


def done(state: GitState, step: str) -> bool:
    return step in state.steps


def commands(state: GitState) -> list[Command]:
    """What the layout still needs (nothing once it is all there)."""
    out: list[Command] = [
        MakePlace(p, how="empty", label=place_label(p))
        for p in places(state)
        if p not in state.places
    ]
    central = state.places.get(CENTRAL)
    if central is None:
        return out
    if state.baseline is None:
        return [
            *out,
            Run(
                key="setup/central",
                place=CENTRAL,
                timeout=SETUP_TIMEOUT,
                jailed=False,
                argv=programs.init_central(state.source, state.book.run_id),
                label="the seeding of the central repository from your tree",
            ),
        ]
    for lane in state.book.lanes:
        if not done(state, lane) and lane_place(lane) in state.places:
            out.append(
                Run(
                    key=f"setup/clone/{lane}",
                    place=lane_place(lane),
                    lane=lane,
                    reads=(CENTRAL,),
                    timeout=SETUP_TIMEOUT,
                    argv=programs.clone(central, lane, outbox=True),
                    label=f"the cloning of the central repository for {lane}",
                )
            )
    if not done(state, INTEGRATION) and INTEGRATION in state.places:
        out.append(
            Run(
                key="setup/clone/integration",
                place=INTEGRATION,
                reads=(CENTRAL,),
                jailed=False,
                timeout=SETUP_TIMEOUT,
                argv=programs.clone(central, INTEGRATION, outbox=False),
                label="the cloning of the central repository for the runtime's merges",
            )
        )
    # (A run stored before evaluators were frozen has main measured and nothing frozen: it
    # freezes now, before any lane turn starts again.)
    if MAIN_CHECKOUT in state.places and not (state.main_measured and state.frozen is not None):
        out.append(_baseline(state, central))
    return out


def _baseline(state: GitState, central: str) -> Command:
    p = state.params
    if not done(state, MAIN_CHECKOUT):
        return Run(
            key="setup/main-checkout",
            place=MAIN_CHECKOUT,
            reads=(CENTRAL,),
            jailed=False,
            timeout=SETUP_TIMEOUT,
            argv=programs.checkout(central, state.baseline or "", None, ()),
            label="a clean checkout of main",
        )
    if state.frozen is None:
        # Before anything runs in the checkout (the baseline's own evaluator included).
        return Freeze(
            FREEZE, place=MAIN_CHECKOUT, paths=tuple(p.evaluator_files), command=p.evaluator
        )
    # The user's own code, jailed like the first lane's (no lane is more trusted).
    return Measure(
        key="setup/main-measure",
        place=MAIN_CHECKOUT,
        command=p.evaluator,
        pattern=p.metric_pattern,
        timeout=p.evaluator_timeout,
        lane=next(iter(state.book.lanes), None),
        label="main in a clean checkout",
    )


def on_result(state: GitState, key: str, receipt: dict[str, Any]) -> GitState:
    """Fold the result of a setup step (`key` starts with `setup/`)."""
    step = key.removeprefix("setup/")
    if step == "main-measure":
        return _measured(state, receipt)
    result = result_of(receipt)
    if result.get("error"):
        return state.replace(
            setup_error=f"setting up the run's git layout ({step}) failed: {result['error']}"
        )
    if step == "central":
        state = state.replace(
            baseline=result["main"], main=result["main"], published=result["main"]
        )
        return jobs.owe(
            state,
            Emit(
                gev.CentralReady(
                    commit=result["main"],
                    files=int(result.get("files") or 0),
                    allowed=list(state.allowed),
                )
            ),
        )
    name = INTEGRATION if step == "clone/integration" else step.removeprefix("clone/")
    if step == "main-checkout":
        name = MAIN_CHECKOUT
    return state.replace(steps=(*state.steps, name))


def on_frozen(state: GitState, event: ev.Frozen) -> GitState:
    """The evaluator's files, frozen (or the reason they could not be, which ends the run)."""
    if event.error:
        return state.replace(setup_error=f"cannot freeze the evaluator's files: {event.error}")
    return state.replace(frozen=dict(event.files))


def _measured(state: GitState, receipt: dict[str, Any]) -> GitState:
    value = receipt.get("value")
    error = receipt.get("error")
    state = state.replace(
        main_measured=True,
        main_score=float(value) if isinstance(value, int | float) and not error else None,
        main_error=str(error) if error else None,
    )
    p = state.params
    out: list[Command] = [
        Emit(
            gev.MainMeasured(
                commit=state.main or "", value=state.main_score, error=state.main_error
            )
        )
    ]
    out.append(
        Emit(
            pev.LeaderboardDeclared(
                metric=p.metric,
                direction=p.direction,
                measured_by_runtime=True,
                command=p.evaluator,
            )
        )
    )
    if state.main_score is not None:
        out.append(
            Emit(
                pev.CandidateSubmitted(
                    report_id="main",
                    metric=p.metric,
                    direction=p.direction,
                    claimed=state.main_score,
                    measured=state.main_score,
                    verified=True,
                    ranked=True,
                )
            )
        )
    return jobs.owe(state, *out)


def failure(state: GitState) -> FinishRun | None:
    """A setup step that failed ends the run (nothing can be merged without the layout)."""
    return FinishRun("failed", state.setup_error) if state.setup_error else None
