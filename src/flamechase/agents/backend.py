"""The one seam between the engine and an agent program.

A turn is a *session*: opened fresh, asked once, maybe asked again to repair its report (in
the same session where the backend can continue one), then closed. The engine never knows
which program is behind it.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from flamechase.jail import JailSpec

if TYPE_CHECKING:
    from flamechase.agents.skills import Mounted
    from flamechase.flow.commands import ResultSpec
    from flamechase.flow.sim import SimActor

AnswerStatus = Literal["finished", "failed", "timeout", "limited", "interrupted"]


@dataclasses.dataclass(frozen=True, slots=True)
class Usage:
    """What one answer cost. Token counts are per answer, never running totals."""

    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # True when the figure comes from the agent itself (exec:, ACP), not a CLI or price table.
    self_reported: bool = False
    # The account's usage shares the CLI reported meanwhile (`weekly`, `window_5h`,
    # `extra_credit`, fractions of 1: agents/account.py), and which CLI said them. Not a
    # cost: a later answer's figure replaces an earlier one's, never adds to it. Left out of
    # the hash (a Usage stays hashable); equality still compares it.
    shares: Mapping[str, float] = dataclasses.field(default_factory=dict, hash=False)
    shares_from: str = ""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            cost_usd=self.cost_usd + other.cost_usd,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            self_reported=self.self_reported or other.self_reported,
            shares={**self.shares, **other.shares},
            shares_from=other.shares_from if other.shares else self.shares_from,
        )

    def reporting(self, shares: Mapping[str, float], by: str) -> Usage:
        """This usage with the account shares `by` (a CLI) reported; itself when none."""
        if not shares:
            return self
        return dataclasses.replace(self, shares=dict(shares), shares_from=by)


@dataclasses.dataclass(frozen=True, slots=True)
class TurnRequest:
    """Everything a backend needs to run one session of one role."""

    run_id: str
    run_dir: Path
    flow: str
    role: str
    lane: str  # "lane-1" ...; "" for turns outside lanes
    turn: int  # 1-based number of this turn in its lane (planning attempts: the attempt number)
    attempt: int  # 1-based; a turn taken again after a crash or a usage limit keeps `turn`
    workspace: Path  # cwd of the agent
    io_dir: Path  # per-turn directory: prompt.md, report.json, usage.json, inbox.json, logs
    prompt: str
    # Extra environment for exec-style agents (FLAMECHASE_INBOX, _ARTIFACTS, _CHECKPOINT, ...).
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    turn_timeout: float = 14400.0
    silence_timeout: float = 900.0
    # Seconds between SIGTERM and SIGKILL when the agent's processes are ended.
    kill_grace: float = 5.0
    # JSON schema of the result, for CLIs that can enforce one (claude --json-schema, codex
    # outputSchema); set when the flow's ResultSpec asks for a structured answer.
    result_schema: Mapping[str, Any] | None = None
    # The jail every process of this turn runs in; None = unconfined.
    jail: JailSpec | None = None
    # The result the turn must end with (the engine validates it; a simulated agent builds it).
    result: ResultSpec | None = None
    # The flow's simulated actor, given only to a backend that is `simulated`.
    actor: SimActor | None = None
    # The flow's skill as this turn's CLI takes it (agents/skills.py); None: the prompt
    # carries the protocol.
    skill: Mounted | None = None

    @property
    def writable(self) -> tuple[Path, ...] | None:
        """The jail's writable roots (a CLI's own sandbox reads them); None unconfined."""
        if self.jail is None or not self.jail.confined:
            return None
        return self.jail.writable()

    @property
    def report_path(self) -> Path:
        return self.io_dir / "report.json"

    @property
    def usage_path(self) -> Path:
        return self.io_dir / "usage.json"

    @property
    def prompt_path(self) -> Path:
        return self.io_dir / "prompt.md"


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """How one ask ended. `structured` is a report the CLI returned in-band, if any."""

    status: AnswerStatus
    usage: Usage = Usage()
    error: str | None = None  # one line (plus a clipped tail of stderr) when not finished
    exit_code: int | None = None
    structured: Any = None
    text: str = ""
    # Set with status "limited": when the usage window reopens.
    resets_at: datetime | None = None
    transcript: Path | None = None


# Called with (process-group id, process token) right after the agent process starts, so the
# control loop can record both durably: a resumed engine ends what a crashed engine left
# running with `procs.end_group_now(pgid, token)` (the token also finds setsid() daemons, and
# guards against a reused pgid).
SpawnHook = Callable[[int, str], None]


class Session(abc.ABC):
    """One fresh agent session. Not reusable across turns."""

    #: Whether `ask(repair=...)` continues the same conversation (claude, codex) or starts
    #: the program again with the reason (exec:).
    continues: bool = False

    @abc.abstractmethod
    async def ask(self, prompt: str, *, repair: str | None = None) -> Answer:
        """Send `prompt` (or, with `repair`, a repair request) and wait for the answer."""

    async def close(self) -> None:  # noqa: B027 -- optional hook, most sessions hold nothing
        """End the session and everything it started."""

    async def cut(self) -> None:  # noqa: B027 -- optional hook
        """Stop the answer under way now (hard stop, budget.graceful=false)."""


class Backend(abc.ABC):
    """An agent kind (`exec`, `sim`, `claude`, ...). Stateless; opens sessions."""

    #: Spend reported by the agent itself rather than measured or priced by flamechase.
    self_reported: bool = False
    #: Plays the flow's simulated actor (`TurnRequest.actor`) rather than running an agent.
    simulated: bool = False

    @abc.abstractmethod
    def open(self, request: TurnRequest, on_spawn: SpawnHook) -> Session:
        """Return a new session for `request`; nothing is started until `ask`."""

    def check(self) -> None:  # noqa: B027 -- optional hook
        """Raise BackendUnavailable when the agent cannot run here (called before a run)."""

    def can_bound_cost(self) -> bool:
        """Whether budget.cost can see this agent's spend (reported cost or a known price)."""
        return True

    def price_notice(self) -> str | None:
        """One line for the start of a run when spend is counted at an upper bound."""
        return None

    def spend_notice(self, role: str) -> str | None:
        """One line for the start of a run when this agent's spend cannot be seen, else None."""
        return None
