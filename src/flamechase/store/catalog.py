"""Finding runs on disk: list them, and resolve `RUN` (an id, a unique prefix, or `last`), or,
with no RUN named, this directory's latest run."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flamechase.errors import RunNotFound, StoreError
from flamechase.store import home
from flamechase.store.db import DB_NAME
from flamechase.store.reader import Reader


def run_dirs() -> list[Path]:
    root = home.runs_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / DB_NAME).is_file() and not p.is_symlink())


def list_runs() -> list[dict[str, Any]]:
    """Every readable run, oldest first, as `runs --json` shows them."""
    out = []
    for d in run_dirs():
        try:
            with Reader(d / DB_NAME) as r:
                run = r.run()
                spend = r.spend()
        except StoreError:
            continue
        task = str(run.get("task") or "").strip()
        out.append(
            {
                "id": run["id"],
                "flow": run["flow"],
                "workspace": run["workspace"],
                "status": run["status"],
                "created": run["created"],
                "turns": int(spend["turns"]),
                "cost_usd": round(float(spend["cost"]), 6),
                # The objective's first line, to tell runs apart in a list.
                "task_line": task.splitlines()[0][:200] if task else "",
            }
        )
    out.sort(key=lambda r: (r["created"], r["id"]))
    return out


def resolve(ref: str) -> Path:
    """The run directory `ref` names."""
    dirs = run_dirs()
    if not dirs:
        raise RunNotFound(f"no runs under {home.runs_dir()}; start one with flamechase exec")
    if ref == "last":
        runs = list_runs()
        if not runs:
            raise RunNotFound("no readable runs; start one with flamechase exec")
        last: str = runs[-1]["id"]
        return home.runs_dir() / last
    exact = [d for d in dirs if d.name == ref]
    if exact:
        return exact[0]
    matches = [d for d in dirs if d.name.startswith(ref)] if ref else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise RunNotFound(f"no run matches {ref!r}; see `flamechase runs` for ids, or use last")
    raise RunNotFound(f"{ref!r} matches {len(matches)} runs; give more of the id")


def _covers(workspace: str, here: Path) -> bool:
    """True if the run's workspace is `here` or a directory above it."""
    ws = Path(workspace)
    return ws == here or ws in here.parents


def resolve_here(ref: str | None, note: Callable[[str], None] | None = None) -> Path:
    """The run `ref` names; with none named, the latest run made on this directory (or on the
    tree it lies in), and `note` says so when that is not the newest run anywhere; with no run
    here, the newest anywhere, said as such."""
    if ref is not None:
        return resolve(ref)
    runs = list_runs()
    if not runs:
        return resolve("last")  # its refusal says how to start one
    here = Path(os.getcwd()).resolve()
    mine = [r for r in runs if _covers(str(r["workspace"]), here)]
    newest = runs[-1]
    say = note or (lambda _text: None)
    if not mine:
        say(
            f"no run on {here}; showing the newest anywhere, run {newest['id']} "
            f"on {newest['workspace']}"
        )
        return home.runs_dir() / str(newest["id"])
    picked = mine[-1]
    if picked["id"] != newest["id"]:
        say(
            f"run {picked['id']}: this directory's latest (the newest anywhere is "
            f"{newest['id']}, `last`)"
        )
    return home.runs_dir() / str(picked["id"])
