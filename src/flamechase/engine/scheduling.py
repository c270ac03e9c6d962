"""Turning a flow's `StartTurn` into a job: its slot, attempt, files, prompt, confinement.

Pure apart from writing the turn's own inputs (its directory and inbox file), which are
rewritten if the turn is taken again. The loop decides *whether* a turn starts (admission,
rest, holds, pauses); this module decides *what* starts.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flamechase import events as ev
from flamechase import jail as jails
from flamechase.agents.backend import TurnRequest
from flamechase.agents.skills import mount as mount_skill
from flamechase.agents.spec import AgentSpec
from flamechase.engine import inbox as inbox_mod
from flamechase.engine import namespace
from flamechase.engine.confinement import turn_jail
from flamechase.engine.executor import TurnJob
from flamechase.engine.flowcode import FlowCode
from flamechase.engine.layout import SOURCE, RunLayout
from flamechase.engine.prepare import Prepared
from flamechase.flow.api import REASON, TurnContext
from flamechase.flow.commands import StartTurn
from flamechase.fsutil import private_dirs, real_dir, write_new
from flamechase.jail import JailSpec
from flamechase.procs import TOKEN_VAR
from flamechase.store import home
from flamechase.store.reader import Reader


def slot_of(cmd: StartTurn) -> str:
    """The key under which at most one turn runs at a time: its lane, or `@role`."""
    return cmd.lane if cmd.lane is not None else f"@{cmd.role}"


@dataclasses.dataclass(frozen=True, slots=True)
class Planned:
    """A turn ready to start: the job, its start event, and what the loop records."""

    slot: str
    job: TurnJob
    started: ev.TurnStarted
    acks: Mapping[str, int]
    token: str
    io_dir: Path
    artifact_root: Path | None


class TurnBuilder:
    def __init__(
        self, prep: Prepared, layout: RunLayout, reader: Reader, run_id: str, code: FlowCode
    ) -> None:
        self.prep = prep
        self.layout = layout
        self.reader = reader
        self.run_id = run_id
        self.code = code

    def place_path(self, place: str) -> Path:
        return self.prep.workspace if place == SOURCE else self.layout.place(place)

    def jail(
        self,
        *,
        lane: str | None,
        place: str,
        turn_dir: Path | None,
        cli: str | None,
        role: str,
        lanes: Sequence[str],
        places: Mapping[str, Path],
        reads: Sequence[str] = (),
        at: Path | None = None,
        ports: tuple[int, int] | None = None,
    ) -> JailSpec | None:
        """The jail of a turn (or, with `cli` None, a measurement) in `place`; None when the
        run's jail is off. `reads`: other places the command may read; `at`: where it runs
        instead of the place itself (a yardstick's copy of it); `ports`: the only TCP ports
        it may bind (a lane turn's block)."""
        mode = self.prep.jail_mode
        if mode == "off":
            return None
        spec = turn_jail(
            mode,
            self.layout,
            lane=lane,
            place=place,
            place_path=at or self.place_path(place),
            turn_dir=turn_dir,
            cli=cli,
            role=role,
            source=self.prep.workspace,
            state_home=home.state_home(),
            lanes=lanes,
            places=places,
            reads=reads,
            ports=ports,
        )
        jails.ready(spec)
        return spec

    def workspace_map(self, lanes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        lay = self.layout
        return {
            "run_id": self.run_id,
            "source": str(self.prep.workspace),
            "lanes": {
                ln["lane"]: {
                    "workspace": ln["workspace"],
                    "ownership": (
                        "original-source-and-integration"
                        if ln["workspace"] == str(self.prep.workspace)
                        else "private-snapshot"
                    ),
                    "actors": list(ln["roles"]),
                    "artifact_root": str(lay.artifact_root(ln["lane"])),
                    "checkpoint": str(lay.checkpoint(ln["lane"])),
                }
                for ln in lanes
            },
        }

    # long: every input of a turn (paths, inbox, env, jail, prompt) is decided here together.
    def build(
        self,
        cmd: StartTurn,
        *,
        attempt: int,
        objective: str,
        flow_state: Any,
        lanes: Sequence[Mapping[str, Any]],
        places: Mapping[str, Path],
        agent: AgentSpec | None = None,
    ) -> Planned:
        """`agent`: the alternative the turn runs on (engine/failover), else the role's own."""
        prep, lay = self.prep, self.layout
        spec = agent or prep.agents[cmd.role]
        backend = prep.alternates.get(spec.text) or prep.backends[cmd.role]
        slot = slot_of(cmd)
        lane = cmd.lane
        if lane is not None:
            io_dir = lay.turn_dir(lane, cmd.number, attempt)
        else:
            io_dir = lay.solo_turn_dir(cmd.place, cmd.role, cmd.number, attempt)
        private_dirs(io_dir.parent, lay.root)
        real_dir(io_dir)  # the agent may have planted a link here: never write through it
        batch = (
            inbox_mod.unread(self.reader, lane, list(cmd.inbox_from))
            if lane is not None and cmd.inbox_from
            else inbox_mod.Batch([], {})
        )
        inbox_path = io_dir / "inbox.json"
        # An input for the agent, rebuilt if the turn is taken again: no fsync needed.
        write_new(
            inbox_path, json.dumps(batch.deliveries, ensure_ascii=False, indent=1).encode("utf-8")
        )
        artifact_root = lay.artifact_root(lane) if lane is not None and cmd.artifacts else None
        checkpoint = lay.checkpoint(lane) if lane is not None and cmd.checkpoint else None
        identity = {
            "run_id": self.run_id,
            "lane": lane or "",
            "turn": cmd.number,
            "attempt": attempt,
        }
        workspace = self.place_path(cmd.place)
        skill = self.code.skill(cmd.role)
        mounted = mount_skill(spec.cli, skill, io_dir) if skill else None
        ctx = TurnContext(
            run_id=self.run_id,
            flow=prep.flow.name,
            objective=objective,
            turn=cmd,
            attempt=attempt,
            workspace=workspace,
            io_dir=io_dir,
            report_path=io_dir / "report.json",
            inbox_path=inbox_path,
            inbox=batch.deliveries,
            artifact_root=artifact_root,
            checkpoint_path=checkpoint,
            checkpoint_identity=identity,
            workspace_map=self.workspace_map(lanes),
            skill=mounted.name if mounted else "",
        )
        token = secrets.token_hex(16)
        env = {"FLAMECHASE_LANES": ",".join(ln["lane"] for ln in lanes), TOKEN_VAR: token}
        if lane is not None:
            env["FLAMECHASE_INBOX"] = str(inbox_path)
        if artifact_root is not None:
            env["FLAMECHASE_ARTIFACTS"] = str(artifact_root)
        if checkpoint is not None:
            env["FLAMECHASE_CHECKPOINT"] = str(checkpoint)
        requests = io_dir / "requests.jsonl" if cmd.requests else None
        if requests is not None:
            env["FLAMECHASE_REQUESTS"] = str(requests)
        ns = namespace.namespace_of(lay, self.run_id, lane=lane, place=cmd.place, role=cmd.role)
        env.update(ns.env())
        env.update(cmd.env)
        jail = self.jail(
            lane=lane,
            place=cmd.place,
            turn_dir=io_dir,
            cli=spec.program,
            role=cmd.role,
            lanes=[ln["lane"] for ln in lanes],
            places=places,
            reads=cmd.reads,
            # A lane's turns keep to its block (its measurements run the user's evaluator,
            # which may bind what it likes: it is not the lane's to change).
            ports=(ns.block.base, ns.block.count) if lane is not None else None,
        )
        enforced = jail is not None and jail.ports is not None and jails.enforces_ports()
        if jail is not None:
            env["TMPDIR"] = str(jail.tmp)
        else:
            private_dirs(ns.tmp, lay.root)
        flow, code = prep.flow, self.code
        repair = code.repair_prompt(flow_state, ctx, REASON)
        before, _, after = repair.partition(REASON)
        request = TurnRequest(
            run_id=self.run_id,
            run_dir=lay.root,
            flow=flow.name,
            role=cmd.role,
            lane=lane or "",
            turn=cmd.number,
            attempt=attempt,
            workspace=workspace,
            io_dir=io_dir,
            prompt=code.prompt(flow_state, ctx) + namespace.prompt_note(ns, enforced=enforced),
            env=env,
            turn_timeout=prep.params.turn_timeout,
            silence_timeout=prep.params.silence_timeout,
            kill_grace=prep.params.kill_grace,
            jail=jail,
            result_schema=code.result_schema(cmd.result.model) if cmd.result.structured else None,
            result=cmd.result,
            skill=mounted,
            # Only a simulated agent plays the flow's actor (it travels with the job).
            actor=(code.call("simulator()", flow.simulator) if backend.simulated else None),
        )
        job = TurnJob(
            job_id=f"{slot}:{cmd.number}:{attempt}",
            agent=spec.text,
            request=request,
            result=cmd.result,
            repair=(before, after),
            checkpoint=checkpoint,
            checkpoint_identity=identity,
            requests=requests,
        )
        started = ev.TurnStarted(
            lane=lane,
            actor=cmd.role,
            turn=cmd.number,
            attempt=attempt,
            backend=spec.text,
            place=cmd.place,
            delivered=[d["report_id"] for d in batch.deliveries],
            reads=list(cmd.inbox_from) if lane else [],
        )
        return Planned(
            slot=slot,
            job=job,
            started=started,
            acks=batch.acks,
            token=token,
            io_dir=io_dir,
            artifact_root=artifact_root,
        )
