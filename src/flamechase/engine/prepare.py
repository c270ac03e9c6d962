"""Everything decided before a run touches the disk: refusals happen here or not at all.

Resolves the flow's params, the objective, whether to resume (and which run), the agents,
the budget and the large-copy check. Writes nothing: a refusal leaves no trace.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from flamechase import jail as jails
from flamechase.agents.backend import Backend
from flamechase.agents.registry import backend_for
from flamechase.agents.spec import AgentSpec, assign_choices, without_roles
from flamechase.budgets import NO_BUDGET, Budget
from flamechase.config import parse_settings
from flamechase.engine import objective as obj
from flamechase.engine.checks import check_declarations
from flamechase.engine.flowcode import FlowCode
from flamechase.engine.layout import RECLAIMED, RUN_KEY
from flamechase.engine.notices import Folded, StartNotice, jail_notice
from flamechase.engine.rerun import check_rerun
from flamechase.engine.roles import with_role_defaults_all
from flamechase.errors import (
    BackendUnavailable,
    FlamechaseError,
    FlowChanged,
    FlowError,
    FlowRefused,
    LargeCopyRefused,
    NothingToResume,
    ParamError,
    SandboxUnavailable,
    StoreError,
    TaskError,
    WorkspaceInvalid,
)
from flamechase.flow import CopyParams, Flow, FlowParams
from flamechase.fsutil import read_regular_file
from flamechase.loader import flow_identity
from flamechase.store import home
from flamechase.store.reader import Reader
from flamechase.workspace.stats import large_copy_warning, measure


@dataclasses.dataclass(frozen=True, slots=True)
class RunRequest:
    """What the command line asked for, parsed but not yet judged."""

    flow: Flow[Any]
    agents: list[tuple[str | None, str]]
    settings: Mapping[str, object]
    task: str
    workspace: Path
    resume: bool = False
    # How -f named the flow (for the run's record of where its code came from).
    flow_ref: str = ""
    # Resume even if the flow's code changed since the run was made.
    refresh: bool = False
    # Asked when a confirmation is needed; None when nobody can answer (no TTY).
    confirm: Callable[[str], bool] | None = None
    warn: Callable[[str], None] = print


@dataclasses.dataclass(frozen=True, slots=True)
class Prepared:
    flow: Flow[Any]
    params: FlowParams
    budget: Budget
    agents: dict[str, AgentSpec]
    backends: dict[str, Backend]
    objective: str
    task_fingerprint: str
    workspace: Path
    resume_from: Path | None  # run directory of the run to pick up
    revised: bool  # resuming with a changed objective: re-plan
    notices: tuple[StartNotice, ...]
    jail_mode: jails.Mode = "off"  # the jail of lanes outside the source
    flow_source: str = ""
    flow_hash: str = ""
    # Each bound in force: "given now" (this command line) or "set earlier" (a past session).
    budget_from: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # The roles given alternatives (`-a ROLE='A|B|C'`): every one in order, the first being
    # `agents[role]`, and the backend of each by its spec text (engine/failover).
    choices: Mapping[str, tuple[AgentSpec, ...]] = dataclasses.field(default_factory=dict)
    alternates: Mapping[str, Backend] = dataclasses.field(default_factory=dict)

    def backends_by_text(self) -> dict[str, Backend]:
        """Every checked backend by its spec text (what a turn job names), alternatives too."""
        out = {s.text: b for r, s in self.agents.items() if (b := self.backends.get(r))}
        return {**self.alternates, **out}

    def recorded_agents(self) -> dict[str, str]:
        """Each role's agent as the run records it: its alternatives as written, `A|B|C`."""
        out = {r: s.text for r, s in self.agents.items()}
        out.update({r: "|".join(s.text for s in specs) for r, specs in self.choices.items()})
        return out


def _runs_of(flow: str, workspace: Path) -> list[tuple[str, Path, dict[str, Any]]]:
    """(created, run dir, run row) of runs of `flow` on `workspace`, newest first."""
    found = []
    root = home.runs_dir()
    if not root.is_dir():
        return []
    for entry in root.iterdir():
        db = entry / "run.db"
        if not db.is_file() or db.is_symlink():
            continue
        if (entry / RECLAIMED).exists():  # gc took its copies: a new run, not a resume
            continue
        if not _may_be(entry / RUN_KEY, flow, str(workspace)):
            continue
        try:
            with Reader(db) as r:
                row = r.run()
        except StoreError:
            continue
        if row["flow"] == flow and row["workspace"] == str(workspace):
            found.append((row["created"], entry, row))
    found.sort(key=lambda t: (t[0], t[2]["id"]), reverse=True)
    return found


def _may_be(key: Path, flow: str, workspace: str) -> bool:
    """Whether the run whose key is at `key` may be of `flow` on `workspace`: False only when
    its key names another; without a readable key (a run made before keys were written), its
    database says. A start so opens the databases of its own runs, not of every run."""
    try:
        said = json.loads(read_regular_file(key, 1 << 16))
    except (ValueError, OSError):  # FileRefused is a ValueError: missing, a link, too big
        return True
    if not isinstance(said, dict):
        return True
    return bool(said.get("flow", flow) == flow and said.get("workspace", workspace) == workspace)


def prepare(req: RunRequest) -> Prepared:
    ws = req.workspace
    if not ws.is_dir():
        raise WorkspaceInvalid(
            f"workspace {ws} is not a directory; run flamechase in your repository"
        )
    ws = ws.resolve()
    flow = req.flow
    # The flow's declarations are its code too: run where an exception or an exit is a
    # flow error (one line), not a traceback or the end of the process.
    code = FlowCode(flow)
    try:
        return _prepare(req, ws, code)
    except FlowError as exc:  # no run was made: a refusal, as for any bad input
        raise FlowRefused(str(exc), getattr(exc, "traceback", "")) from exc
    finally:
        code.close()


def _prepare(req: RunRequest, ws: Path, code: FlowCode) -> Prepared:
    flow = req.flow
    flow_source, flow_hash = flow_identity(flow, req.flow_ref or flow.name)
    # Params are validated by the flow's model (its validators are its code); the
    # engine's own refusals (ParamError) pass through as they are.
    mine = (FlamechaseError,)
    budget_given, given = code.call(
        "Params", parse_settings, dict(req.settings), flow.Params, flow.name, passthrough=mine
    )
    found = _resume_decision(req, ws, given)
    if found.row is not None and found.run_dir is not None:
        refresh = req.refresh and found.row.get("flow_hash") != flow_hash
        check_rerun(found.run_dir, found.row, budget_given, req.resume, found.revised, refresh)
        _same_flow_code(found.row, flow_hash, req.refresh)
    params, budget = code.call(
        "Params", _params_and_budget, flow, given, budget_given, found.row, passthrough=mine
    )
    check_declarations(
        flow.name,
        code.call("roles()", flow.roles, params),
        code.lanes(params),
    )
    # Where each bound in force came from: this command line, or the run's earlier sessions.
    budget_from = {
        key: ("given now" if key in budget_given else "set earlier")
        for key, value in budget.to_json().items()
        if key != "graceful" and value is not None
    }
    notices: list[StartNotice] = []
    if budget.is_empty():
        # The seeds: a run ends "when the budget runs out, or you stop it".
        notices.append(NO_BUDGET)
    agents, backends, choices, alternates = _agents(req, code, params, budget, notices)
    _large_copies(req, code, params, ws, fresh=found.row is None, revised=found.revised)
    # Every role's agents run jailed to their own place (or, said explicitly, unconfined).
    choice = jails.choose(params.sandbox, jails.probe())
    _installation_outside(ws, choice.mode)
    notices += [*choice.notices[:-1], jail_notice(choice)]
    notices += code.call("start_notices()", flow.start_notices, params)
    return Prepared(
        flow=flow,
        params=params,
        jail_mode=choice.mode,
        budget=budget,
        agents=agents,
        backends=backends,
        objective=found.objective,
        task_fingerprint=found.fingerprint,
        workspace=ws,
        resume_from=found.run_dir,
        revised=found.revised,
        notices=tuple(notices),
        flow_source=flow_source,
        flow_hash=flow_hash,
        budget_from=budget_from,
        choices=choices,
        alternates=alternates,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Found:
    """The objective, and the run it continues (if any)."""

    objective: str
    fingerprint: str
    run_dir: Path | None = None
    row: dict[str, Any] | None = None
    revised: bool = False  # resuming with a changed objective


def _resume_decision(req: RunRequest, ws: Path, given: FlowParams) -> _Found:
    flow = req.flow
    task = req.task.strip()
    if not task:
        raise TaskError(
            "TASK is empty; say what the agents should achieve, or `continue` to pick up TASK.md"
        )
    fresh_only = given.resume_mode == "fresh" or not flow.resumable
    candidates = [] if fresh_only else _runs_of(flow.name, ws)
    found: _Found
    if obj.is_marker(task):
        text = obj.read_task_file(ws)
        if text is None:
            if not candidates:
                raise TaskError(
                    f"`{task}` needs {ws / obj.TASK_FILE} or a run of {flow.name} "
                    "on this workspace to resume; write TASK.md or give the task"
                )
            text = candidates[0][2]["task"]
        fp = obj.fingerprint(text)
        found = _Found(text, fp)
        if candidates:
            _, run_dir, row = candidates[0]
            found = _Found(text, fp, run_dir, row, row["task_fingerprint"] != fp)
    else:
        fp = obj.fingerprint(task)
        found = next(
            (_Found(task, fp, d, row) for _, d, row in candidates if row["task_fingerprint"] == fp),
            _Found(task, fp),
        )
    if req.resume and found.row is None:
        raise NothingToResume(
            f"--resume: no run of {flow.name} on {ws} with this task"
            + (" (resume_mode=fresh forbids resuming)" if given.resume_mode == "fresh" else "")
            + ("" if flow.resumable else f" ({flow.name} does not resume: every start is new)")
            + "; drop --resume to start one"
        )
    return found


def _params_and_budget(
    flow: Flow[Any],
    given: FlowParams,
    budget_given: dict[str, object],
    row: Mapping[str, Any] | None,
) -> tuple[FlowParams, Budget]:
    """On resume, what is given replaces what was stored; structural params may not change."""
    if row is None:
        return given, Budget().merged(budget_given)
    given_keys = set(given.model_fields_set)
    stored = dict(row["params"])
    for key in flow.structural_params:
        if key in given_keys and stored.get(key) != getattr(given, key):
            raise ParamError(
                f"run {row['id']} was started with {key}={stored.get(key)}; it "
                f"cannot change on resume; pass -p resume_mode=fresh to start a new run"
            )
    merged = {**stored, **{k: getattr(given, k) for k in given_keys}}
    try:
        params = flow.Params.model_validate(merged)
    except Exception as exc:  # stored params from an older version
        raise ParamError(
            f"stored params of run {row['id']} no longer validate "
            f"({exc.__class__.__name__}); start fresh with "
            "-p resume_mode=fresh"
        ) from None
    return params, Budget.from_json(row["budget"]).merged(budget_given)


def _agents(
    req: RunRequest,
    code: FlowCode,
    params: FlowParams,
    budget: Budget,
    notices: list[StartNotice],
) -> tuple[
    dict[str, AgentSpec],
    dict[str, Backend],
    dict[str, tuple[AgentSpec, ...]],
    dict[str, Backend],
]:
    """Every role's agent, checked here (installed, priced), with what to say at start; a
    role's alternatives are each checked the same way (any of them may take its turns)."""
    flow = code.flow
    described = code.call("describe_roles()", flow.describe_roles, params)
    roles = code.call("roles()", flow.roles, params)
    every = with_role_defaults_all(
        assign_choices(req.agents, roles, flow.name, without_roles(described)), described, flow.name
    )
    agents = {role: specs[0] for role, specs in every.items()}
    choices = {role: specs for role, specs in every.items() if len(specs) > 1}
    backends: dict[str, Backend] = {}
    alternates: dict[str, Backend] = {}
    self_reported: list[str] = []
    for role, specs in every.items():
        for spec in specs:
            backend = alternates.get(spec.text) or backend_for(spec)
            backend.check()
            if budget.cost is not None and not backend.can_bound_cost():
                raise BackendUnavailable(
                    f"budget.cost cannot see what {role} ({spec.text}) spends: its CLI reports "
                    "no cost and its model has no known price; add it to a price file and set "
                    "FLAMECHASE_PRICES=FILE, or drop budget.cost"
                )
            if backend.self_reported and role not in self_reported:
                self_reported.append(role)
            price_notice = backend.price_notice()  # once per model, however many roles share
            if price_notice and price_notice not in notices:
                notices.append(price_notice)
            notice = backend.spend_notice(role)
            if notice and notice not in notices:
                notices.append(notice)
            if spec is specs[0]:
                backends[role] = backend
            if len(specs) > 1:
                alternates[spec.text] = backend
    if self_reported:
        detail = (
            "spend of " + ", ".join(self_reported) + " is self-reported by the "
            "agent (exec:, sim, acp:); cost and token budgets count what it reports"
        )
        one = len(self_reported) == 1
        whose = (
            "1 role is self-reported by its agent"
            if one
            else (f"{len(self_reported)} roles is self-reported by their agents")
        )
        notices.append(Folded(f"spend of {whose}", detail))
    return agents, backends, choices, alternates


def _large_copies(
    req: RunRequest, code: FlowCode, params: FlowParams, ws: Path, *, fresh: bool, revised: bool
) -> None:
    """Copies of a large tree: measured before anything exists, confirmed if asked to."""
    flow = req.flow
    copies = code.call(
        "copies_needed()", lambda: flow.copies_needed(params, fresh=fresh, revised=revised)
    )
    if not copies:
        return
    limits = params if isinstance(params, CopyParams) else CopyParams()
    what = code.call("copy_names()", lambda: flow.copy_names(params, fresh=fresh, revised=revised))
    warning = large_copy_warning(
        measure(ws),
        copies,
        limits.workspace_file_warning_threshold,
        limits.workspace_copy_warning_threshold_bytes,
        source=ws,
        description=f"{copies} workspace snapshot{'s' if copies != 1 else ''} ({', '.join(what)})",
    )
    if warning is None:
        return
    req.warn(warning)
    if not limits.confirm_large_workspace_copies:
        req.warn("Confirmation is off (confirm_large_workspace_copies=false); continuing.")
        return
    if req.confirm is None:
        raise LargeCopyRefused(
            "large copies need a confirmation and nobody can answer here (no "
            "terminal); set confirm_large_workspace_copies=false or shrink the tree"
        )
    if not req.confirm("Start anyway and make these copies?"):
        raise LargeCopyRefused("startup cancelled; no copy was made")


def _same_flow_code(row: Mapping[str, Any], flow_hash: str, refresh: bool) -> None:
    """Refuse to resume a run with flow code other than its own, unless asked to."""
    stored = row.get("flow_hash") or ""
    if not stored:
        raise FlowChanged(
            f"run {row['id']} was made by an older flamechase that did not "
            "record its flow code; start fresh with -p resume_mode=fresh"
        )
    if stored != flow_hash and not refresh:
        raise FlowChanged(
            f"run {row['id']} was made with other code of flow {row['flow']} "
            f"({stored[:12]}, now {flow_hash[:12]}); pass --refresh to resume "
            "it with the new code, or -p resume_mode=fresh to start anew"
        )


def _installation_outside(ws: Path, mode: str) -> None:
    """Refuse a run whose agents would write flamechase's own installation and cannot be kept
    out of it: Landlock cannot make a directory read-only inside the tree lane 1 writes (the
    bubblewrap jail re-binds it read-only)."""
    from flamechase.engine.confinement import installation_inside

    inside = installation_inside(ws)
    if inside and mode == "landlock":
        raise SandboxUnavailable(
            f"flamechase runs from {inside[0]}, inside the tree its agents write ({ws}), and "
            "the Landlock jail cannot keep them out of it; install flamechase outside the tree "
            "(pipx, or a virtual environment elsewhere) or install bubblewrap"
        )
