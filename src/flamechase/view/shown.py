"""What `status` shows of a run beyond its tables (its flow's panels and alerts), kept between
calls so that a call folds only the flow's events since the last one.

`summary.fold_shown` folds every event of the flow's own kinds (and the places and the run's
creation, which its sentences name) from the start: a cost that grows with the run. Here the
fold's state after a call (the places, the budget's limits, the lanes, every panel's rows,
columns and order, the alerts) is written with the last event it folded to the state home
(`cache/shown/<sha256 of the run id>.json`, at most `KEEP` runs' files, the least recently
written dropped),
and the next call starts from it, reading only the events after that one (one indexed query).
The flow's sentences and panels are drawn only from that state (a flow's `show` sees the
places, lanes and limits; the turns, reports and spend of the run are not folded here), so a
fold resumed from it is the fold from the start.

A kept state is used only for the fold it was made by: the same run (its id and creation
time), the same flamechase (version, and the files of the views' fold and the engine's event
kinds, by size and modification time) and the same flow code (its code hash as imported now).
Anything else, or a file that cannot be read as one, folds from the start as before. It is
not run state: losing it costs one fold; views still never write a run's directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flamechase.fsutil import atomic_write, read_regular_file
from flamechase.store import home
from flamechase.store.db import DB_NAME
from flamechase.store.reader import Reader
from flamechase.view.board import Panels
from flamechase.view.state import RunFold

KEEP = 200
_MAX_BYTES = 64 << 20
_BATCH = 5000


def fold_kept(run_dir: Path) -> RunFold:
    """`summary.fold_shown(run_dir)`'s fold, folding only the events since the last call."""
    from flamechase.loader import load_recorded, recorded_code
    from flamechase.view.summary import shown_skip

    with Reader(run_dir / DB_NAME) as r:
        run = r.run()
        source = str(run.get("flow_source") or "")
        load_recorded(source)
        key = _key(run, recorded_code(source))
        fold = RunFold.from_run(run, r.lanes())
        path = _path(str(run.get("id", "")))
        after = _restore(fold, _read(path), key)
        start = after
        skip = shown_skip()
        while True:
            batch = r.events_except(skip, after=after, limit=_BATCH)
            for row in batch:
                fold.apply(row)
                after = int(row["seq"])
            if len(batch) < _BATCH:
                break
    if after != start or start == 0:
        _write(path, key, fold, after)
    return fold


def _key(run: Mapping[str, Any], flow_code: str) -> str:
    from flamechase import __version__

    stamp = hashlib.sha256(f"{__version__}\0{flow_code}".encode())
    stamp.update(f"\0{run.get('id')}\0{run.get('created')}".encode())
    # The fold's own code: a changed view or engine kind draws differently.
    for name in _FOLD_CODE:
        file = getattr(sys.modules.get(name), "__file__", None)
        with contextlib.suppress(OSError, TypeError):
            st = os.stat(file)  # type: ignore[arg-type]
            stamp.update(f"\0{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return stamp.hexdigest()


# The modules whose code decides what the fold keeps (all imported by then).
_FOLD_CODE = (
    "flamechase.view.state",
    "flamechase.view.board",
    "flamechase.view.rows",
    "flamechase.view.inbox",
    "flamechase.view.turns",
    "flamechase.view.summary",
    "flamechase.view.shown",
    "flamechase.events.base",
    "flamechase.events.present",
    "flamechase.events.run",
    "flamechase.events.turns",
    "flamechase.events.lanes",
)


def _path(run_id: str) -> Path:
    name = hashlib.sha256(run_id.encode()).hexdigest()
    return home.state_home() / "cache" / "shown" / f"{name}.json"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(read_regular_file(path, _MAX_BYTES))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _restore(fold: RunFold, kept: dict[str, Any] | None, key: str) -> int:
    """Put a kept state into `fold`; the last event it folded (0: none kept, fold it all)."""
    if kept is None or kept.get("key") != key:
        return 0
    try:
        after = int(kept["seq"])
        places = {str(k): (str(v[0]), str(v[1])) for k, v in kept["places"].items()}
        limits = {str(k): (None if v is None else float(v)) for k, v in kept["limits"].items()}
        panels = Panels.from_json(kept["panels"])
        alerts = [str(a) for a in kept["alerts"]]
        lanes = [str(n) for n in kept["lanes"]]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return 0
    for name in lanes:
        fold.ensure_lane(name)
    fold.places.update(places)
    fold.limits.update(limits)
    fold.panels = panels
    fold.alerts = alerts
    return after


def _write(path: Path, key: str, fold: RunFold, seq: int) -> None:
    kept = {
        "key": key,
        "seq": seq,
        "places": {k: list(v) for k, v in fold.places.items()},
        "limits": fold.limits,
        "lanes": list(fold.order),
        "panels": fold.panels.to_json(),
        "alerts": fold.alerts,
    }
    with contextlib.suppress(OSError, ValueError):
        top = home.state_home()
        if not top.is_dir():  # never the first thing in a state home
            return
        home.ensure_private_dir(path.parent)
        atomic_write(path, json.dumps(kept).encode(), durable=False)
        _prune(path.parent)


def _prune(folder: Path) -> None:
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    for old in files[:-KEEP]:
        with contextlib.suppress(OSError):
            old.unlink()
