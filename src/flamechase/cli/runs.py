"""`runs`, `status` and `events`: read-only looks at runs, live or finished."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from flamechase.text import echo, echo_json


@click.group("runs", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="a JSON list of runs")
@click.pass_context
def runs_command(ctx: click.Context, as_json: bool) -> int:
    """List runs, oldest first, with the disk each takes (`runs rm RUN` removes one)."""
    if ctx.invoked_subcommand is not None:
        return 0
    from flamechase.store.catalog import list_runs
    from flamechase.store.home import runs_dir
    from flamechase.workspace.diskuse import disk_use, size_text

    runs = list_runs()
    for r in runs:
        r["disk_bytes"] = disk_use(runs_dir() / r["id"])
    if as_json:
        echo_json(json.dumps(runs, indent=1))
        return 0
    if not runs:
        echo("no runs yet")
    for r in runs:
        echo(
            f"{r['id']}  {r['status']:<9} {r['flow']:<22} turns {r['turns']:<5} "
            f"${r['cost_usd']:<9.4f} {size_text(r['disk_bytes']):>9}  {r['workspace']}"
        )
    return 0


def _add_rm() -> None:
    from flamechase.cli.gc import rm_command

    runs_command.add_command(rm_command)


_add_rm()


# long: the `status --json` document, built field by field in one place.
def run_status(run_dir: Path, *, views: bool = False) -> dict[str, Any]:
    """What `status --json` prints for the run in `run_dir`.

    Generic rows (lanes, budget, spend) come from the engine's tables; what only the flow
    knows (a plan, a leaderboard, whose turn is next) from the summary the flow's `describe`
    left with its state: top-level keys as they are, `lanes` merged into each lane's row.
    Turns outside lanes (planning, judging) are listed per role. `views`: also the
    flow's panels and alerts, as its events show them (the views' fold over the flow's own
    events, view/summary.fold_shown, kept between calls: view/shown.fold_kept).
    """
    from flamechase.budgets import Budget
    from flamechase.engine.rerun import way_on
    from flamechase.store import ports
    from flamechase.store.home import locks_dir
    from flamechase.store.reader import Reader
    from flamechase.workspace.diskuse import disk_use
    from flamechase.workspace.locks import owner

    with Reader(run_dir / "run.db") as r:
        run = r.run()
        lanes = r.lanes()
        spend = r.spend()
        inflight = {row["lane"]: row for row in r.inflight()}
        hosts = r.lane_hosts()
        solo = r.solo_turns()
        try:
            stored = r.flow_state()
        except Exception:  # a run of an older flamechase: no flow state table
            stored = None
        opened = r.last_event(("run_created", "run_resumed"))
        ended = r.last_event(("run_finished", "run_stopped", "run_failed", "run_held"))
        stop = r.last_event(("stopping",))
        # What releases each held lane, as its flow said when it held it.
        remedies = {e["lane"]: e["payload"].get("remedy", "") for e in r.events_of("lane_held")}
        alternatives = _alternatives(r, run.get("agents") or {})
        said = r.events_of("notice", opened["seq"] if opened else 0)
        notices = [e["payload"].get("message", "") for e in said]
        # A long notice in full (its detail), for `status --verbose`.
        notices_in_full = [
            e["payload"].get("detail") or e["payload"].get("message", "") for e in said
        ]
    disk_bytes = disk_use(run_dir)
    blocks = ports.held(run["id"])  # each lane's port block, while its run keeps it
    summary: dict[str, Any] = dict(stored["summary"]) if stored else {}
    lane_extra: dict[str, Any] = summary.pop("lanes", None) or {}
    status = run["status"]
    engine_alive = None
    if status in ("starting", "running"):
        held_by = owner(locks_dir(), Path(run["workspace"]))
        engine_alive = bool(held_by and held_by.get("run_id") == run["id"])
        if not engine_alive:
            status = "stopped"
    budget = Budget.from_json(run["budget"])
    out: dict[str, Any] = {
        "id": run["id"],
        "flow": run["flow"],
        "flow_source": run.get("flow_source") or None,
        "flow_hash": run.get("flow_hash") or None,
        "workspace": run["workspace"],
        "status": status,
        "engine_running": engine_alive,
        "created": run["created"],
        "updated": run["updated"],
        "task": run["task"],
        "budget": {
            "duration": {"limit": budget.duration, "used": round(run["active_seconds"], 3)},
            "cost": {"limit": budget.cost, "used": round(float(spend["cost"]), 6)},
            "turns": {"limit": budget.turns, "used": int(spend["turns"])},
            "output_tokens": {"limit": budget.output_tokens, "used": int(spend["output_tokens"])},
            "disk": {"limit": budget.disk, "used": disk_bytes},
            "graceful": budget.graceful,
            # Where each bound in force came from ("given now" by the session that set it
            # last, or "set earlier"); none at all: the run goes on until stopped.
            "from": dict((opened or {}).get("payload", {}).get("budget_from") or {}),
            "unbounded": budget.is_empty(),
        },
        "lanes": [
            {
                "lane": ln["lane"],
                "workspace": ln["workspace"],
                "roles": ln["roles"],
                "turns": ln["turns"],
                "valid_turns": ln["valid_turns"],
                "consecutive_failures": ln["consecutive_failures"],
                "held": ln["held"],
                "held_reason": ln["held_reason"],
                "held_remedy": (remedies.get(ln["lane"]) or None) if ln["held"] else None,
                "last_status": ln["last_status"],
                "last_error": ln["last_error"],
                "paused_until": ln["paused_until"],
                # Its block of ports (FLAMECHASE_PORT_BASE..), None once given back.
                "ports": (
                    f"{b.base}-{b.base + b.count - 1}"
                    if (b := blocks.get(ln["lane"])) is not None
                    else None
                ),
                # Where its last turn ran: "HOST, node ID" on a Ray node, None here.
                "host": hosts.get(ln["lane"]),
                "in_flight": (
                    {
                        "turn": inflight[ln["lane"]]["number"],
                        "role": inflight[ln["lane"]]["role"],
                        "started": inflight[ln["lane"]]["started"],
                    }
                    if ln["lane"] in inflight
                    else None
                ),
                **(lane_extra.get(ln["lane"]) or {}),
            }
            for ln in lanes
        ],
        "outside_lanes": [_outside(s, inflight) for s in solo],
        # Roles given alternatives: each in order, which is current, which are in a window.
        "alternatives": alternatives,
        "last_error": run["last_error"],
        "ended": (
            ended["payload"].get("message")
            if ended and (not opened or ended["seq"] > opened["seq"])
            else None
        ),
        "stopping": bool(engine_alive and stop and opened and stop["seq"] > opened["seq"]),
        # What to type to go on from a run that stopped or ended ("" while it runs).
        "next": None if engine_alive else (way_on(run_dir, {**run, "status": status}) or None),
        "disk_bytes": disk_bytes,
        "notices": notices,
        "notices_in_full": notices_in_full,
    }
    if views:
        out.update(_shown(run_dir))
    for key, value in summary.items():
        out.setdefault(key, value)
    return out


def _alternatives(r: Any, agents: dict[str, Any]) -> list[dict[str, Any]]:
    """Each role given alternatives (`A|B|C`): them in order, the one its turns run on now
    (its last turn's, else its first), and those closed by a usage window or a failed start
    (engine/failover's fold of the recorded turn ends)."""
    import time

    from flamechase.agents.spec import split_choices
    from flamechase.engine import failover
    from flamechase.engine.clock import iso

    choices = {role: split_choices(str(text)) for role, text in agents.items()}
    choices = {role: alts for role, alts in choices.items() if len(alts) > 1}
    if not choices:
        return []
    kinds = ("turn_started", "turn_valid", "turn_failed", "turn_interrupted", "lane_paused")
    rows = sorted((row for k in kinds for row in r.events_of(k)), key=lambda row: row["seq"])
    book = failover.Book(choices)
    book.replay(rows)
    spent = r.spend_by_agent()
    now = time.time()
    out = []
    for role, alts in choices.items():
        current = book.last.get(role) or alts[0]
        closed = {
            a: {"until": iso(c.until), "why": c.why}
            for a in alts
            if (c := book.closed.get(a)) is not None and c.until > now
        }
        # What each cost: every attempt on it counts toward the run's budgets.
        spend = {
            a: {"turns": int(got["turns"]), "cost_usd": round(float(got["cost"]), 6)}
            for a in alts
            if (got := spent.get((role, a))) is not None
        }
        out.append(
            {
                "role": role,
                "alternatives": alts,
                "current": current,
                "closed": closed,
                "spent": spend,
            }
        )
    return out


def _outside(solo: dict[str, Any], inflight: dict[str, Any]) -> dict[str, Any]:
    """A role's turns outside lanes, as `status --json` gives them."""
    return {
        "role": solo["role"],
        "turns": solo["turns"],
        "valid_turns": solo["valid"],
        "last_error": solo["last_error"],
        "in_flight": solo["lane"] in inflight,
    }


def _shown(run_dir: Path) -> dict[str, Any]:
    """What the run's events show beyond the tables: the flow's panels and alerts."""
    from flamechase import events as ev
    from flamechase.store.reader import Reader

    with Reader(run_dir / "run.db") as r:
        # A run whose flow journals no kind of its own shows no panel: no need to import the
        # flow (and pydantic) and fold, which would double the time `status` takes.
        engine = {
            k for k, c in ev.REGISTRY.items() if c.__module__.startswith("flamechase.events.")
        }
        if not set(r.kinds()) - engine:
            return {"panels": [], "alerts": []}
    from flamechase.view.shown import fold_kept
    from flamechase.view.summary import panels_json

    fold = fold_kept(run_dir)
    return {"panels": panels_json(fold.panels.freeze()), "alerts": list(fold.alerts)}


@click.command("status")
@click.argument("run", required=False)
@click.option("--json", "as_json", is_flag=True, help="a JSON object")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="notices in full (what the jail stops and leaves open, whose spend is self-reported)",
)
def status_command(run: str | None, as_json: bool, verbose: bool) -> int:
    """Where RUN stands (an id, a unique prefix, or `last`)."""
    from flamechase.cli.pick import pick

    st = run_status(pick(run), views=True)
    if as_json:
        echo_json(json.dumps(st, indent=1))
        return 0
    for line in status_lines(st, verbose=verbose):
        echo(line)
    return 0


def _lane_lines(ln: dict[str, Any]) -> list[str]:
    """A lane in `status`: its turns, what comes next, its state, where its last turn ran
    (when on a Ray node); then why it is held, or its last error, and what releases it."""
    lane_state = "HELD" if ln["held"] else ("paused" if ln["paused_until"] else "ok")
    nxt = f", next {ln['next_role']}" if ln.get("next_role") else ""
    valid = ln.get("valid_turns", 0)
    on = f", last turn on {ln['host']}" if ln.get("host") else ""
    block = f", ports {ln['ports']}" if ln.get("ports") else ""
    out = [
        f"  {ln['lane']}: {_count(ln['turns'], 'turn')} ({valid} valid){nxt}, {lane_state}{on}"
        + block
    ]
    why = ln["held_reason"] if ln["held"] else ln["last_error"]
    if why:
        out.append(f"      {'held' if ln['held'] else 'last error'}: {str(why)[:160]}")
    if ln.get("held_remedy"):
        out.append(f"      to release it: {ln['held_remedy']}")
    return out


# long: every line of `status` for people, in the order they read it.
def status_lines(st: dict[str, Any], *, verbose: bool = False) -> list[str]:
    """`status` for people: durations and counts as people write them; `verbose`: each
    notice in full, not its one line."""
    from flamechase.events import budget_words, human_seconds

    state = "stopping" if st.get("stopping") else st["status"]
    out = [f"run {st['id']} · {st['flow']} · {state} · {st['workspace']}"]
    task = str(st.get("task") or "").strip().splitlines()
    if task:
        out.append(f"task: {task[0][:100]}")
    if st.get("ended"):
        out.append(f"ended: {st['ended']}")
    if st.get("next"):
        out.append(f"next: {st['next']}")
    b = st["budget"]
    limits = {k: b[k]["limit"] for k in ("duration", "cost", "turns", "output_tokens")}
    spent = {k: {"used": b[k]["used"]} for k in limits}
    out.append(
        budget_words(
            limits,
            b.get("from") or dict.fromkeys([k for k, v in limits.items() if v is not None], "set"),
            spent,
        )
    )
    used = [
        f"active {human_seconds(float(b['duration']['used']))}",
        _count(int(b["turns"]["used"]), "turn"),
        # Cents once it is a dollar; below, as the run's end line says it (a run of small
        # turns, each alternative's spend beside it, must not read $0.00).
        f"${cost:.2f}" if (cost := float(b["cost"]["used"])) >= 1 else f"${cost:.4f}",
    ]
    if st.get("disk_bytes") is not None:
        from flamechase.workspace.diskuse import size_text

        used.append(f"disk {size_text(int(st['disk_bytes']))}")
    out.append("spent: " + ", ".join(used))
    notes = (st.get("notices_in_full") if verbose else None) or st.get("notices") or ()
    out += [f"note: {n}" for n in notes if n]
    if not verbose and st.get("notices_in_full", notes) != list(notes):
        out.append("  (`flamechase status --verbose` shows the notices in full)")
    for ln in st["lanes"]:
        out += _lane_lines(ln)
    out += _alternative_lines(st.get("alternatives") or ())
    for solo in st.get("outside_lanes") or ():
        busy = ", working" if solo.get("in_flight") else ""
        out.append(
            f"  {solo['role']} (outside lanes): {_count(solo['turns'], 'turn')} "
            f"({solo['valid_turns']} valid){busy}"
        )
    for line in st.get("display") or ():  # what the flow wants shown, as it wrote it
        out.append(f"  {line}")
    out += panel_lines(st.get("panels") or ())
    alerts = st.get("alerts") or ()
    for text in alerts[-ALERTS:]:
        out.append(f"alert: {str(text)[:300]}")
    if len(alerts) > ALERTS:
        out.append(f"  ({len(alerts)} alerts in all; `status --json` lists every one)")
    best = (st.get("leaderboard") or {}).get("best")
    if best:
        out.append(
            f"best: {best['metric']} = {best['value']:g} from {best['lane']} ({best['report_id']})"
        )
    if st["last_error"] and st["last_error"] != st.get("ended"):
        out.append(f"last error: {st['last_error']}")
    return out


def _alternative_lines(roles: Any) -> list[str]:
    """`  ROLE: A (usage window until 10:00Z, 1 turn, $0.0010) | B (current) | C`, a line
    per role."""
    from flamechase.events.present import money

    out = []
    for role in roles:
        said = []
        for agent in role["alternatives"]:
            notes = []
            if agent == role["current"]:
                notes.append("current")
            closed = role["closed"].get(agent)
            if closed:
                notes.append(f"{closed['why']} until {str(closed['until'])[11:16]}Z")
            spent = (role.get("spent") or {}).get(agent)
            if spent:
                notes.append(f"{_count(spent['turns'], 'turn')}, {money(spent['cost_usd'])}")
            said.append(agent + (f" ({', '.join(notes)})" if notes else ""))
        out.append(f"  {role['role']} alternatives: " + " | ".join(said))
    return out


ALERTS = 5  # the last alerts `status` prints
PANEL_ROWS = 8  # rows of a panel `status` prints: those changed last


def panel_lines(panels: Any) -> list[str]:
    """Each of the flow's panels, a row a line (`key: column value · ...`); a long panel
    shows the rows that changed last."""
    from flamechase.events.present import cell_text

    out = []
    for panel in panels:
        rows = {r["key"]: r["cells"] for r in panel["rows"]}
        keep = set(panel.get("touched", list(rows))[-PANEL_ROWS:])
        more = len(rows) - len(keep)
        out.append(
            f"{panel['name']}:"
            + (f" (the {len(keep)} of {len(rows)} that changed last)" if more > 0 else "")
        )
        for key, cells in rows.items():
            if key in keep:
                said = " · ".join(
                    f"{c} {cell_text(cells.get(c))}" for c in panel["columns"] if c in cells
                )
                out.append(f"  {key}: {said}")
    return out


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


@click.command("events")
@click.argument("run", required=False)
@click.option("--json", "as_json", is_flag=True, help="NDJSON, one event per line")
@click.option("--follow", is_flag=True, help="keep printing new events until the run ends")
def events_command(run: str | None, as_json: bool, follow: bool) -> int:
    """The event log of RUN."""
    from flamechase.cli.observe import Narrator
    from flamechase.cli.pick import pick
    from flamechase.store.reader import Reader

    run_dir = pick(run)
    narrator = Narrator()
    after = 0
    ended = {"run_finished", "run_stopped", "run_failed", "run_held"}
    over = False  # the run was seen over: one more read takes what it committed meanwhile
    with Reader(run_dir / "run.db") as r:
        from flamechase.loader import load_recorded

        load_recorded(str(r.run().get("flow_source") or ""))
        while True:
            batch = r.events(after=after, limit=1000)
            for ev in batch:
                after = ev["seq"]
                if as_json:
                    echo_json(json.dumps(ev, ensure_ascii=False, separators=(",", ":")))
                else:
                    echo(narrator.line(ev))
            if not follow:
                return 0
            if batch and batch[-1]["kind"] in ended:
                st = run_status(run_dir)
                if st["status"] not in ("running", "starting"):
                    return 0
            if not batch:
                if over:
                    return 0
                st = run_status(run_dir)
                if st["status"] not in ("running", "starting"):
                    over = True
                    continue
                time.sleep(0.2)
