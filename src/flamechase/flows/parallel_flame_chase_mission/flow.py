"""parallel_flame_chase_mission's decider: parallel_flame_chase's lanes (run by that flow's
own decider, `LANES`, whose state it keeps inside its own), plus missions, audits and lane
1's integration queue.

Every engine event goes to parallel_flame_chase first (places, plan, turns, reports, artifacts,
evaluator, leaderboard), then this flow reads what it means for the missions. Its commands are
parallel_flame_chase's, a lane's turn only while its mission is active and no audit pauses it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, cast

from flamechase import events as ev
from flamechase.flow import (
    Command,
    DropPlace,
    Emit,
    FinishRun,
    Flow,
    FlowState,
    LaneDef,
    MakePlace,
    ResultSpec,
    Role,
    RunSetup,
    SimActor,
    Skill,
    StartTurn,
    TurnContext,
    WaitUntil,
)
from flamechase.flow.lanes import report_id
from flamechase.flows.parallel_flame_chase import ParallelFlameChase, ParallelParams
from flamechase.flows.parallel_flame_chase.flow import PfcState
from flamechase.flows.parallel_flame_chase.planner import PLANNER
from flamechase.flows.parallel_flame_chase_mission import apply as applying
from flamechase.flows.parallel_flame_chase_mission import audits as au
from flamechase.flows.parallel_flame_chase_mission import clocks, integrate
from flamechase.flows.parallel_flame_chase_mission import events as mev
from flamechase.flows.parallel_flame_chase_mission import ingress as ing
from flamechase.flows.parallel_flame_chase_mission import packet as pk
from flamechase.flows.parallel_flame_chase_mission import prompts as mp
from flamechase.flows.parallel_flame_chase_mission import protect as pr
from flamechase.flows.parallel_flame_chase_mission import refresh as refreshing
from flamechase.flows.parallel_flame_chase_mission import sim as msim
from flamechase.flows.parallel_flame_chase_mission import skill as mission_skill
from flamechase.flows.parallel_flame_chase_mission.decisions import Decision
from flamechase.flows.parallel_flame_chase_mission.missions import Missions, Status, epoch
from flamechase.flows.parallel_flame_chase_mission.params import MissionParams
from flamechase.flows.parallel_flame_chase_mission.queue import Queue
from flamechase.flows.parallel_flame_chase_mission.specs import (
    TERMINAL,
    MissionPlanResult,
    MissionReport,
)

MISSION_REPORT = ResultSpec(MissionReport)
LANE1 = "lane-1"


class _Lanes(ParallelFlameChase):
    """parallel_flame_chase as this flow runs it: bounded missions in its plan, and no holds
    (two failed turns or a `blocked` report start an audit instead)."""

    Params = MissionParams
    plan_result = MissionPlanResult
    holds = False


LANES = _Lanes()


class MissionState(FlowState):
    pfc: PfcState
    missions: Missions = Missions()
    audits: au.Audits = au.Audits()
    queue: Queue = Queue()
    ingress: ing.Ingress = ing.Ingress()
    protect: pr.Protect = pr.Protect()
    planned: int = 0  # the plan revision the missions were made from
    streak: dict[str, int] = {}  # lane -> failed turns in a row
    latest: dict[str, dict[str, Any]] = {}  # lane -> its latest report, as the packet shows it


class ParallelFlameChaseMission(Flow[MissionState, MissionParams]):
    name = "parallel_flame_chase_mission"
    summary = (
        "parallel_flame_chase's lanes, audited: falsifiable missions, scoped audits by a "
        "fresh coordinator, and lane 1's verified integration queue."
    )
    version = "1"
    structural_params = ("lanes",)

    # ---- declarations: parallel_flame_chase's ------------------------------------------------

    def lanes(self, params: MissionParams) -> list[LaneDef]:
        return LANES.lanes(params)

    def roles(self, params: MissionParams) -> list[str]:
        return LANES.roles(params)

    def describe_roles(self, params: MissionParams) -> list[Role]:
        roles = LANES.describe_roles(params)
        said = "plans one bounded mission per lane, then decides each audit in a fresh session"
        return [Role(r.name, said) if r.name == PLANNER else r for r in roles]

    def copies_needed(self, params: MissionParams, *, fresh: bool, revised: bool) -> int:
        return LANES.copies_needed(params, fresh=fresh, revised=revised)

    def copy_names(self, params: MissionParams, *, fresh: bool, revised: bool) -> list[str]:
        return LANES.copy_names(params, fresh=fresh, revised=revised)

    def demo_params(self, fields: Mapping[str, Any], evaluator: str) -> dict[str, str]:
        return LANES.demo_params(fields, evaluator)

    def simulator(self) -> SimActor:
        return msim.ACTOR

    # ---- folding ---------------------------------------------------------------------------

    def start(self, setup: RunSetup[MissionParams]) -> MissionState:
        # Its params are parallel_flame_chase's and more: that flow reads its own.
        return MissionState(pfc=LANES.start(cast("RunSetup[ParallelParams]", setup)))

    def evolve(self, state: MissionState, event: ev.Event) -> MissionState:
        turn = getattr(event, "turn", 0)
        if event.lane is None and event.actor == PLANNER and turn >= au.AUDIT_TURNS:
            pfc = state.pfc.replace(outbox=state.pfc.outbox.settle(event))
            return self._decision(state.replace(pfc=pfc), event)
        if isinstance(event, ev.ObjectiveRevised) and state.missions.items:
            # Not a re-plan: a global audit, whose coordinator sees the new objective and
            # redirects (or keeps) each mission at work.
            t = au.Trigger(
                id=f"objective:{event.task_fingerprint}:{event.seq}",
                kind="objective_revision",
                scope="global",
                why="the objective was revised (TASK.md changed)",
                at=event.at,
            )
            return self._trigger(state, t)
        state = state.replace(pfc=LANES.evolve(state.pfc, event))
        p = state.pfc
        if p.planning is None and p.plan and p.revision != state.planned:
            return self._planned(state, event.at)
        if isinstance(event, ev.RunResumed) and state.audits.open:  # a resume tries again
            return state.replace(audits=state.audits.retry())
        if isinstance(event, ev.TurnValid | ev.TurnFailed) and event.lane and self._globs(state):
            state = state.replace(protect=state.protect.ended(event.lane, turn, event.attempt))
        if isinstance(event, ev.TurnValid) and event.lane:
            return self._outcome(state, event)
        if isinstance(event, ev.TurnFailed) and event.lane:
            return self._failed(state, event)
        if isinstance(event, ev.Frozen) and event.key.startswith(pr.KEY):
            return self._protected(state, event)
        if isinstance(event, mev.AuditTriggered):
            return self._clock(state, event)
        if isinstance(event, mev.AuditDeciding) and state.audits.open:
            return state.replace(audits=state.audits.deciding())
        if isinstance(event, ev.Ran) and event.key.startswith("verify:"):
            return self._verified(state, event)
        if isinstance(event, ev.Ran) and event.key.startswith(ing.KEY):
            return self._external(state, event)
        return state

    def _owe(self, state: MissionState, owed: Sequence[Command]) -> MissionState:
        return state.replace(pfc=state.pfc.replace(outbox=state.pfc.outbox.add(*owed)))

    def _trigger(self, state: MissionState, t: au.Trigger) -> MissionState:
        # A global audit reviews the lanes still at work (a lane whose mission is final has
        # nothing to decide, unless the trigger names it).
        ms = state.missions
        live = [n for n in state.pfc.book.lanes if n == t.lane or not ms.final(n)]
        book, owed = state.audits.trigger(t, live or list(state.pfc.book.lanes))
        return self._owe(state.replace(audits=book), owed)

    def _planned(self, state: MissionState, at: str) -> MissionState:
        """A plan (or a new plan for a revised objective): every lane's mission from it."""
        ms, owed = state.missions, []
        for mid in ms.current.values():
            if ms.items[mid].status not in ("accepted", "rejected"):
                ms, more = ms.move(mid, "rejected", at=at, why="the objective was revised")
                owed += more
        for entry in (state.pfc.plan or {}).get("lanes", []):
            ms, more = ms.create(entry["lane"], entry["mission"], at=at, why="planned")
            owed += more
        audits = state.audits
        hours = state.pfc.params.model_dump().get("global_audit_hours") or 0
        if hours and not audits.next_global_at:
            audits = audits.replace(next_global_at=epoch(at) + float(hours) * 3600)
        state = state.replace(missions=ms, planned=state.pfc.revision, audits=audits)
        return self._owe(state, owed)

    def _outcome(self, state: MissionState, e: ev.TurnValid) -> MissionState:
        lane = e.lane or ""
        rid = report_id(state.pfc.book.run_id, lane, e.turn, e.attempt)
        m = state.missions.of(lane)
        seen = pk.report(rid, e, m.id if m else None)
        external = state.latest.get(lane, {}).get("external")
        if external:  # what an adapter said of the lane stays beside its reports
            seen["external"] = external
        state = state.replace(latest={**state.latest, lane: seen}, streak={**state.streak, lane: 0})
        if m is None or m.status != "active":
            return state
        status = e.report_status or "progress"
        if status not in TERMINAL:
            n = m.turns_since_dispatch + 1
            state = state.replace(missions=state.missions.update(m.id, turns_since_dispatch=n))
            if n < m.limit:
                return state
            why = f"{n} progress turns without an outcome (its limit is {m.limit})"
            return self._trigger(
                state,
                au.Trigger(
                    id=f"stall:{m.id}:{rid}", kind="turn_stall", lane=lane, why=why, at=e.at
                ),
            )
        to: Status = "blocked" if status == "blocked" else "completed"
        ms, owed = state.missions.move(
            m.id, to, at=e.at, why=f"{status}: {e.summary[:300]}", outcome=seen
        )
        state = self._owe(state.replace(missions=ms), owed)
        scope = "global" if lane == LANE1 and status == "deliverable_ready" else "targeted"
        t = au.Trigger(
            id=f"outcome:{m.id}:{rid}",
            kind="mission_outcome",
            scope=scope,
            lane=lane,
            why=f"{lane} reported {status}",
            at=e.at,
        )
        return self._trigger(state, t)

    def _failed(self, state: MissionState, e: ev.TurnFailed) -> MissionState:
        lane = e.lane or ""
        n = state.streak.get(lane, 0) + 1
        state = state.replace(streak={**state.streak, lane: n})
        m = state.missions.of(lane)
        if n < 2 or m is None or m.status != "active" or state.audits.paused(lane):
            return state
        state = state.replace(streak={**state.streak, lane: 0})
        why = f"{n} failed turns in a row: {(e.error or 'failed')[:300]}"
        t = au.Trigger(
            id=f"failed:{m.id}:{e.turn}", kind="failed_turns", lane=lane, why=why, at=e.at
        )
        return self._trigger(state, t)

    def _globs(self, state: MissionState) -> list[str]:
        return list(state.pfc.params.model_dump().get("protected_paths") or [])

    def _protected(self, state: MissionState, e: ev.Frozen) -> MissionState:
        lane = e.key.removeprefix(pr.KEY).rsplit(":", 2)[0]
        m = state.missions.of(lane)
        book, w = state.protect.frozen(e, m.id if m else None)
        state = state.replace(protect=book)
        if w is None:
            return state
        t = au.Trigger(id=f"{e.key}", kind="protected_write", lane=lane, why=w.said(), at=e.at)
        return self._trigger(state, t)

    def _clock(self, state: MissionState, e: mev.AuditTriggered) -> MissionState:
        if e.trigger_kind == "periodic_global_review":
            hours = float(state.pfc.params.model_dump().get("global_audit_hours") or 0)
            nxt = epoch(e.at) + hours * 3600 if hours else 0.0
            state = state.replace(audits=state.audits.replace(next_global_at=nxt))
        elif e.mission_id and e.mission_id in state.missions.items:
            state = state.replace(missions=state.missions.update(e.mission_id, deadline_fired=True))
        t = au.Trigger(
            id=e.trigger_id,
            kind=e.trigger_kind,
            scope="global" if e.scope == "global" else "targeted",
            lane=e.lane,
            why=e.why,
            at=e.at,
        )
        return self._trigger(state, t)

    def _external(self, state: MissionState, e: ev.Ran) -> MissionState:
        lanes = list(state.pfc.book.lanes)
        took, new, errors = ing.parse(state.ingress, e, state.pfc.book.run_id, lanes, epoch(e.at))
        state = state.replace(ingress=took)
        for got in new:
            latest, triggers = ing.absorb(state.latest, got)
            state = state.replace(latest=latest)
            for t in triggers:
                state = self._trigger(state, t)
        if not new and not errors:
            return state
        said = [
            {"event_id": g.event_id, "kind": g.kind, "lane": g.lane, "scope": g.scope} for g in new
        ]
        return self._owe(state, [Emit(mev.ExternalSeen(events=said, errors=errors[:20]))])

    # ---- an audit's decision ---------------------------------------------------------------

    def _decision(self, state: MissionState, e: ev.Event) -> MissionState:
        if isinstance(e, ev.TurnStarted | ev.TurnValid | ev.TurnFailed | ev.TurnInterrupted):
            running = e.turn if isinstance(e, ev.TurnStarted) else None
            state = state.replace(audits=state.audits.replace(running=running))
        a = state.audits.open
        if isinstance(e, ev.TurnFailed) and a is not None and e.turn == a.turn:
            book, a = state.audits.refused(e.error or "failed", epoch(e.at))
            refused = mev.DecisionRefused(
                audit_id=a.id,
                revision=a.revision,
                session=a.sessions,
                error=(e.error or "failed")[:2000],
                retry_at=a.retry_at,
            )
            return self._owe(state.replace(audits=book), [Emit(refused)])
        if not isinstance(e, ev.TurnValid):
            return state
        d = e.result
        if a is None or e.turn != a.turn or d.get("revision") != a.revision:
            aid = str(d.get("audit_id", "?"))
            gone = mev.DecisionDiscarded(
                audit_id=aid,
                revision=int(d.get("revision") or 0),
                why="the audit moved on to a later revision or closed",
            )
            return self._owe(state, [Emit(gone)])
        done = applying.apply(state.missions, state.queue, d, e.at)
        book = state.audits.close(d)
        decided = mev.AuditDecided(
            audit_id=a.id,
            revision=a.revision,
            scope=a.scope,
            verdicts=[pk.verdict(v) for v in d["lanes"]],
        )
        pfc = state.pfc.replace(dropping=(*state.pfc.dropping, a.place))
        state = state.replace(
            missions=done.missions,
            queue=done.queue,
            audits=book,
            pfc=pfc,
            streak={k: v for k, v in state.streak.items() if k not in a.targets},
        )
        state, remade = refreshing.refresh(state, d)
        return self._owe(state, [*done.owed, Emit(decided), *remade])

    # ---- integration -----------------------------------------------------------------------

    def _verified(self, state: MissionState, e: ev.Ran) -> MissionState:
        state, owed, t = integrate.verified(state, e)
        state = self._owe(state, owed)
        return self._trigger(state, t) if t else state

    # ---- deciding --------------------------------------------------------------------------

    def decide(self, state: MissionState, now: float) -> Sequence[Command]:
        base = list(LANES.decide(state.pfc, now))
        if state.pfc.planning is not None or any(isinstance(c, FinishRun) for c in base):
            return base
        out = [c for c in base if not (isinstance(c, StartTurn) and c.lane is not None)]
        if not state.missions.items:
            return out
        waiting = self._integration(state)
        out += waiting
        globs = self._globs(state)
        if globs:  # not on a lane copy being remade: its baseline is hashed once it is made
            private = {ln.place for ln in state.pfc.book.lanes.values() if not ln.in_source}
            gone = set(state.pfc.dropping) | (private - set(state.pfc.places))
            out += [f for f in state.protect.commands(state.pfc.book, globs) if f.place not in gone]
        for c in base:
            if isinstance(c, StartTurn) and c.lane is not None and self._free(state, c.lane):
                if (c.lane == LANE1 and waiting) or (globs and state.protect.waits(c.lane)):
                    continue
                out.append(dataclasses.replace(c, result=MISSION_REPORT))
        out += self._auditing(state, now)
        out += clocks.due(state.missions, state.audits, now)
        out += self._stale_places(state)
        path = state.pfc.params.model_dump().get("external_events")
        if path:
            out += ing.commands(state.ingress, str(path), now)
        if (
            state.missions.idle()
            and state.audits.open is None
            and not state.queue.pending()
            and not state.pfc.measuring
            and not state.pfc.outbox
            and not state.pfc.dropping
        ):
            out.append(
                FinishRun(
                    "finished",
                    "every mission is accepted or rejected and nothing is queued for lane 1",
                )
            )
        return out

    def _free(self, state: MissionState, lane: str) -> bool:
        if state.pfc.book.get(lane).place in state.pfc.dropping:
            return False  # its copy is being remade (a redirect): it works on the new one
        return state.missions.active(lane) and not state.audits.paused(lane)

    def _integration(self, state: MissionState) -> list[Command]:
        """Lane 1 is quiet, no audit is open, an item waits: re-hash its package first."""
        item = state.queue.next()
        lane1 = state.pfc.book.get(LANE1)
        if item is None or state.audits.open is not None or state.queue.busy():
            return []
        if lane1.busy:
            return []
        return [item.verify()]

    def _stale_places(self, state: MissionState) -> list[Command]:
        """Snapshots of revisions an audit moved past, once no decision session uses them."""
        if state.audits.running is not None:
            return []
        a = state.audits.open
        keep = a.place if a else None
        return [
            DropPlace(p)
            for p in state.pfc.places
            if p.startswith("audits/") and p != keep and p not in state.pfc.dropping
        ]

    def _auditing(self, state: MissionState, now: float) -> list[Command]:
        a = state.audits.open
        if a is None:
            return []
        book = state.pfc.book
        measuring = {str(i["lane"]) for i in state.pfc.measuring.values()}
        if any(book.get(t).busy or t in measuring for t in a.targets):
            return []  # a running target finishes its turn; its measurement lands first
        if a.place not in state.pfc.places:
            return [MakePlace(a.place, label=f"audit {a.id}'s snapshot of your tree")]
        if a.status == "quiescing":
            return [
                Emit(
                    mev.AuditDeciding(
                        audit_id=a.id, revision=a.revision, targets=list(a.targets), scope=a.scope
                    )
                )
            ]
        if a.sessions >= au.MAX_SESSIONS:
            last = a.errors[-1] if a.errors else "no valid decision"
            return [
                FinishRun(
                    "failed",
                    f"audit {a.id} (revision {a.revision}) got no valid decision from "
                    f"{a.sessions} fresh coordinator sessions; the runtime does not decide for "
                    f"it (last: {last}); resume the run to give the coordinator another chance",
                )
            ]
        if a.retry_at > now:
            return [WaitUntil(a.retry_at)]
        ctx = pk.decision_context(a, state.missions)
        spec = ResultSpec(Decision, noun="decision", context=ctx)
        return [
            StartTurn(
                role=PLANNER, lane=None, number=a.turn, place=a.place, result=spec, counted=False
            )
        ]

    # ---- words -----------------------------------------------------------------------------

    def prompt(self, state: MissionState, ctx: TurnContext) -> str:
        a = state.audits.open
        if ctx.turn.lane is None and ctx.turn.number >= au.AUDIT_TURNS and a is not None:
            packet = pk.packet(ctx.objective, a, state)
            return mp.audit_prompt(
                packet=packet, targets=a.targets, report_path=ctx.report_path, skill=ctx.skill
            )
        m = state.missions.of(ctx.turn.lane or "")
        if ctx.turn.lane is None or m is None:
            return LANES.prompt(state.pfc, ctx)
        plan = {"lanes": [{"lane": m.lane, "mission": m.spec}]}
        words = LANES.prompt(state.pfc.replace(plan=plan), ctx)
        item = state.queue.items.get(m.queue_item or "")
        return words + "\n" + mp.of_mission(m, item.artifacts if item else (), ctx.skill)

    def skill(self, role: str) -> Skill | None:
        """The lane protocol with the mission rules, for every session: each lane actor's,
        and the coordinator's, which plans the missions and decides the audits."""
        return mission_skill.SKILL

    def repair_prompt(self, state: MissionState, ctx: TurnContext, reason: str) -> str:
        a = state.audits.open
        if ctx.turn.lane is None and ctx.turn.number >= au.AUDIT_TURNS and a is not None:
            return mp.audit_repair_prompt(reason, a.id, a.revision, ctx.report_path)
        return LANES.repair_prompt(state.pfc, ctx, reason)

    def describe(self, state: MissionState) -> dict[str, Any]:
        out = LANES.describe(state.pfc)
        out.pop("plan", None)
        return {**out, **pk.describe(state)}


FLOW = ParallelFlameChaseMission()
