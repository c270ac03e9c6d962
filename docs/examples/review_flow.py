"""review: an author drafts a document, two reviewers read it; until both approve.

    flamechase exec -f docs/examples/review_flow.py -a author=claude/opus \
        -a reviewer_a=codex/gpt-5 -a reviewer_b=gemini/gemini-2.5-pro \
        -p budget.cost=5,rounds=3 "Write DOC.md: how to restore our backups"
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from flamechase.flow import (
    Command,
    Event,
    FinishRun,
    Flow,
    FlowParams,
    FlowState,
    ResultSpec,
    RunSetup,
    StartTurn,
    TurnContext,
    events,
)

REVIEWERS = ("reviewer_a", "reviewer_b")


class Verdict(BaseModel):
    """What a reviewer's turn ends with (validated by the engine; repaired if wrong)."""

    model_config = ConfigDict(extra="forbid")
    approve: bool
    comments: list[str] = Field(default_factory=list, max_length=20)


class ReviewParams(FlowParams):
    rounds: int = Field(default=3, ge=1, le=20, description="drafts before the run gives up")


class ReviewState(FlowState):
    """Everything the flow decides from: stored by the engine with every transaction.
    Frozen; `state.replace(...)` refuses a field it does not have or a value of another type."""

    rounds: int
    draft: int = 1  # the draft being written or reviewed
    drafted: bool = False  # the author's turn for this draft is done
    verdicts: dict[str, dict[str, Any]] = {}  # reviewer -> verdict on this draft
    notes: tuple[str, ...] = ()  # what the reviewers asked for last time


class Review(Flow[ReviewState, ReviewParams]):
    name = "review"
    summary = "An author drafts, two reviewers read, until both approve."

    def roles(self, params: ReviewParams) -> list[str]:
        return ["author", *REVIEWERS]

    def start(self, setup: RunSetup[ReviewParams]) -> ReviewState:
        return ReviewState(rounds=setup.params.rounds)

    def evolve(self, state: ReviewState, event: Event) -> ReviewState:
        # Only valid turns move the document on; a failed or cut turn is simply asked again.
        if not isinstance(event, events.TurnValid):
            return state
        if event.actor == "author":
            return state.replace(drafted=True, verdicts={})
        verdicts = {**state.verdicts, event.actor or "": event.result}
        if len(verdicts) < len(REVIEWERS) or all(v["approve"] for v in verdicts.values()):
            return state.replace(verdicts=verdicts)
        notes = tuple(c for v in verdicts.values() for c in v["comments"])
        return state.replace(draft=state.draft + 1, drafted=False, verdicts={}, notes=notes)

    def decide(self, state: ReviewState, now: float) -> Sequence[Command]:
        if len(state.verdicts) == len(REVIEWERS):  # all in, all approving (see evolve)
            return [FinishRun("finished", f"both reviewers approved draft {state.draft}")]
        if state.draft > state.rounds:
            return [FinishRun("failed", f"not approved after {state.rounds} drafts")]
        if not state.drafted:
            return [StartTurn(role="author", lane=None, number=state.draft)]
        # Both reviewers at once; a turn already under way is not started twice.
        return [
            StartTurn(
                role=r, lane=None, number=state.draft, result=ResultSpec(Verdict, noun="verdict")
            )
            for r in REVIEWERS
            if r not in state.verdicts
        ]

    def prompt(self, state: ReviewState, ctx: TurnContext) -> str:
        if ctx.turn.role == "author":
            asked = "".join(f"\n- {n}" for n in state.notes) or " (first draft)"
            return (
                f"Write or revise the document the objective asks for, in {ctx.workspace}."
                f"\nObjective: {ctx.objective}\nReviewers asked for:{asked}\n"
                f"Then write a JSON report to {ctx.report_path}: "
                '{"status": "progress", "summary": "what changed"}'
            )
        return (
            f"Review the document in {ctx.workspace} against the objective: "
            f"{ctx.objective}\nDo not edit it. Write your verdict as JSON to "
            f'{ctx.report_path}: {{"approve": true|false, "comments": ["..."]}}'
        )

    def describe(self, state: ReviewState) -> dict[str, Any]:
        return {"draft": state.draft, "verdicts": state.verdicts}


FLOW = Review()
