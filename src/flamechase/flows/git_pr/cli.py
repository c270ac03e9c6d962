"""`flamechase pr open|ready|list|show`: pull requests, from inside a lane's clone.

`open` and `ready` do not change anything themselves: they check what they can here (a lane
branch, pushed, at HEAD) and append a request to the turn's requests file
($FLAMECHASE_REQUESTS); the runtime carries it out when the turn ends and reports back. The
lane cannot write run state, and does not need to. `list` and `show` read the run's PR table
(the flow's summary in the run database, read-only): the run of the current turn
($FLAMECHASE_RUN_DIR), or `--run RUN` outside a turn.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import click

from flamechase.errors import PrRefused
from flamechase.text import echo, echo_json

NOT_IN_TURN = (
    "flamechase pr {op} works inside a lane's turn of a pull-request flow "
    "(parallel_flame_chase:git_pr): $FLAMECHASE_REQUESTS is not set"
)


def _git(*args: str) -> str | None:
    proc = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _turn(op: str) -> tuple[Path, str]:
    requests, lane = os.environ.get("FLAMECHASE_REQUESTS"), os.environ.get("FLAMECHASE_LANE")
    if not requests or not lane:
        raise PrRefused(NOT_IN_TURN.format(op=op))
    return Path(requests), lane


def _branch(lane: str, given: str | None) -> tuple[str, str | None]:
    """(branch, its head when it is the current branch) of the request."""
    current = _git("symbolic-ref", "-q", "--short", "HEAD")
    branch = given or current
    if not branch:
        raise PrRefused("not on a branch: check out your lane branch or pass --branch")
    if not branch.startswith(f"{lane}/"):
        raise PrRefused(
            f"{branch} is not one of {lane}'s branches ({lane}/NAME): "
            f"git checkout -B {lane}/NAME, commit, push, then open"
        )
    head = _git("rev-parse", "HEAD") if branch == current else None
    outbox = _git("config", "--get", "flamechase.outbox")
    pushed = (
        _git("--git-dir", outbox, "rev-parse", "-q", "--verify", f"refs/heads/{branch}")
        if outbox
        else None
    )
    if pushed is None:
        raise PrRefused(f"{branch} is not pushed: git push origin {branch}")
    if head is not None and pushed != head:
        raise PrRefused(
            f"HEAD {head[:12]} of {branch} is not what you pushed "
            f"({pushed[:12]}): git push origin {branch}"
        )
    return branch, head or pushed


def _append(path: Path, request: dict[str, Any]) -> None:
    line = (json.dumps(request, ensure_ascii=False, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


@click.group("pr")
def command() -> None:
    """Pull requests of a lane whose flow has them, from inside the lane's clone."""


@command.command("open")
@click.option("--title", required=True, help="what the PR does, one line")
@click.option("--hypothesis", default="", help="what you expect it to change, and why")
@click.option("--branch", help="a pushed branch of this lane (default: the current one)")
def open_command(title: str, hypothesis: str, branch: str | None) -> int:
    """Ask for a draft PR from a pushed lane branch (done when the turn ends)."""
    requests, lane = _turn("open")
    name, head = _branch(lane, branch)
    _append(
        requests,
        {"op": "open", "branch": name, "head": head, "title": title, "hypothesis": hypothesis},
    )
    echo(
        f"requested: a draft PR from {name} at {str(head)[:12]}; the runtime opens it "
        "when your turn ends (`flamechase pr list` in a later turn shows its id)"
    )
    return 0


@command.command("ready")
@click.argument("pr", required=False)
@click.option("--branch", help="the PR's branch (default: the current one)")
def ready_command(pr: str | None, branch: str | None) -> int:
    """Ask the runtime to measure a PR's pushed head and make it ready (freezes the head)."""
    requests, lane = _turn("ready")
    if pr:
        request: dict[str, Any] = {"op": "ready", "pr": pr}
        what = pr
    else:
        name, head = _branch(lane, branch)
        request = {"op": "ready", "branch": name, "head": head}
        what = f"the open PR on {name}"
    _append(requests, request)
    echo(
        f"requested: {what} made ready; the runtime measures it after your turn and "
        "reports back (ready with a receipt, or rejected with the reason)"
    )
    return 0


def _summary(run: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from flamechase.store.catalog import resolve
    from flamechase.store.reader import Reader

    here = os.environ.get("FLAMECHASE_RUN_DIR")
    if run is None and not here:
        raise PrRefused(
            "no run: inside a turn $FLAMECHASE_RUN_DIR names it; elsewhere give --run RUN"
        )
    run_dir = resolve(run) if run is not None else Path(str(here))
    with Reader(run_dir / "run.db") as r:
        stored = r.flow_state()
    summary = dict((stored or {}).get("summary") or {})
    if "pull_requests" not in summary:
        raise PrRefused(f"run {run_dir.name} has no pull requests (not a pull-request flow)")
    pending: list[dict[str, Any]] = []
    requests = os.environ.get("FLAMECHASE_REQUESTS")
    if run is None and requests and Path(requests).is_file():
        pending = [
            json.loads(line)
            for line in Path(requests).read_text().splitlines()
            if line.strip().startswith("{")
        ]
    return summary, pending


def _score(value: Any) -> str:
    return "—" if value is None else f"{value:g}"


@command.command("list")
@click.option("--run", help="a run (id, prefix or last) when not inside a turn")
@click.option("--json", "as_json", is_flag=True)
def list_command(run: str | None, as_json: bool) -> int:
    """The run's PRs, main's score and this turn's requests not yet carried out."""
    summary, pending = _summary(run)
    prs, main = summary["pull_requests"], summary.get("main") or {}
    if as_json:
        echo_json(json.dumps({"main": main, "pull_requests": prs, "requested": pending}, indent=1))
        return 0
    echo(
        f"main {str(main.get('commit'))[:12]}: {main.get('metric')} = "
        f"{_score(main.get('score'))} ({main.get('direction')}); "
        f"{len(summary.get('ledger') or [])} merge(s)"
    )
    for pr in prs:
        echo(
            f"{pr['id']}  {pr['lane']:<7} {pr['status']:<10} {_score(pr.get('score')):>8}"
            f"  {pr['branch']}  {pr['title']}" + (f"  [{pr['reason']}]" if pr.get("reason") else "")
        )
    for req in pending:
        echo(f"requested this turn (not yet carried out): {json.dumps(req)}")
    return 0


@command.command("show")
@click.argument("pr")
@click.option("--run", help="a run (id, prefix or last) when not inside a turn")
def show_command(pr: str, run: str | None) -> int:
    """One PR as JSON: its head, status, receipt (what the runtime measured), reason, merge."""
    summary, _ = _summary(run)
    found = [p for p in summary["pull_requests"] if p.get("id") == pr]
    if not found:
        raise PrRefused(f"there is no {pr}; `flamechase pr list` lists the PRs")
    echo_json(json.dumps(found[0], indent=1))
    return 0
