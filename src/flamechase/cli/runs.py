"""`runs`, `status` and `events`: read-only looks at runs, live or finished."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click


@click.command("runs")
@click.option("--json", "as_json", is_flag=True, help="a JSON list of runs")
def runs_command(as_json: bool) -> int:
    """List runs, oldest first."""
    from flamechase.store.catalog import list_runs

    runs = list_runs()
    if as_json:
        click.echo(json.dumps(runs, indent=1))
        return 0
    if not runs:
        click.echo("no runs yet")
    for r in runs:
        click.echo(f"{r['id']}  {r['status']:<9} {r['flow']:<22} turns {r['turns']:<5} "
                   f"${r['cost_usd']:<9.4f} {r['workspace']}")
    return 0


def run_status(run_dir: Path) -> dict[str, Any]:
    """What `status --json` prints for the run in `run_dir`.

    Generic rows (lanes, budget, spend) come from the engine's tables; what only the flow
    knows (a plan, a leaderboard, whose turn is next) from the summary the flow's `describe`
    left with its state: top-level keys as they are, `lanes` merged into each lane's row.
    """
    from flamechase.config import Budget
    from flamechase.store.db import Reader
    from flamechase.store.home import locks_dir
    from flamechase.workspace.locks import owner

    with Reader(run_dir / "run.db") as r:
        run = r.run()
        lanes = r.lanes()
        spend = r.spend()
        inflight = {row["lane"]: row for row in r.inflight()}
        try:
            stored = r.flow_state()
        except Exception:  # a run of an older flamechase: no flow state table
            stored = None
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
            "output_tokens": {"limit": budget.output_tokens,
                              "used": int(spend["output_tokens"])},
            "graceful": budget.graceful,
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
                "last_status": ln["last_status"],
                "last_error": ln["last_error"],
                "paused_until": ln["paused_until"],
                "in_flight": ({"turn": inflight[ln["lane"]]["number"],
                               "role": inflight[ln["lane"]]["role"],
                               "started": inflight[ln["lane"]]["started"]}
                              if ln["lane"] in inflight else None),
                **(lane_extra.get(ln["lane"]) or {}),
            }
            for ln in lanes
        ],
        "last_error": run["last_error"],
    }
    for key, value in summary.items():
        out.setdefault(key, value)
    return out


@click.command("status")
@click.argument("run", default="last")
@click.option("--json", "as_json", is_flag=True, help="a JSON object")
def status_command(run: str, as_json: bool) -> int:
    """Where RUN stands (an id, a unique prefix, or `last`)."""
    from flamechase.store.catalog import resolve

    st = run_status(resolve(run))
    if as_json:
        click.echo(json.dumps(st, indent=1))
        return 0
    click.echo(f"run {st['id']} · {st['flow']} · {st['status']} · {st['workspace']}")
    b = st["budget"]
    parts = []
    for key in ("duration", "cost", "turns", "output_tokens"):
        if b[key]["limit"] is not None:
            parts.append(f"{key} {b[key]['used']}/{b[key]['limit']}")
        elif b[key]["used"]:
            parts.append(f"{key} {b[key]['used']}")
    click.echo("budget: " + ", ".join(parts))
    for ln in st["lanes"]:
        state = "HELD" if ln["held"] else ("paused" if ln["paused_until"] else "ok")
        nxt = f", next {ln['next_role']}" if ln.get("next_role") else ""
        click.echo(f"  {ln['lane']}: {ln['turns']} turns{nxt}, {state}"
                   + (f", last error: {ln['last_error'][:100]}" if ln["last_error"] else ""))
    for line in st.get("display") or ():  # what the flow wants shown, as it wrote it
        click.echo(f"  {line}")
    best = (st.get("leaderboard") or {}).get("best")
    if best:
        click.echo(f"best: {best['metric']} = {best['value']} from {best['lane']} "
                   f"({best['report_id']})")
    if st["last_error"]:
        click.echo(f"last error: {st['last_error']}")
    return 0


@click.command("events")
@click.argument("run", default="last")
@click.option("--json", "as_json", is_flag=True, help="NDJSON, one event per line")
@click.option("--follow", is_flag=True, help="keep printing new events until the run ends")
def events_command(run: str, as_json: bool, follow: bool) -> int:
    """The event log of RUN."""
    from flamechase.cli.observe import describe
    from flamechase.store.catalog import resolve
    from flamechase.store.db import Reader

    run_dir = resolve(run)
    after = 0
    ended = {"run_finished", "run_stopped", "run_failed", "run_held"}
    over = False  # the run was seen over: one more read takes what it committed meanwhile
    with Reader(run_dir / "run.db") as r:
        while True:
            batch = r.events(after=after, limit=1000)
            for ev in batch:
                after = ev["seq"]
                click.echo(json.dumps(ev, ensure_ascii=False, separators=(",", ":"))
                           if as_json else describe(ev))
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
