"""What must hold of any run, however often its engine was killed: checked from disk.

Used by the crash harness after every kill and resume, and usable on any run directory.
Read-only: it opens the database read-only and reads the turns' inbox files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flamechase.fsutil import read_regular_file
from flamechase.store.blobs import BlobStore
from flamechase.store.reader import Reader


# long: one pass over a run's tables checks every invariant together.
def check_run(run_dir: Path, *, turn_limit: int | None = None) -> list[str]:
    """Every violated invariant, as one line each; [] when the run is sound."""
    bad: list[str] = []
    with Reader(run_dir / "run.db") as r:
        lanes = r.lanes()
        turns = r.turns()
        reports = r.reports()
        artifacts = r.artifacts()
        cursors = {ln["lane"]: r.cursors(ln["lane"]) for ln in lanes}
    seq_of = {rep.report_id: rep.seq for rep in reports}
    lane_of = {rep.report_id: rep.lane for rep in reports}
    published = [rep.report_id for rep in reports]
    if len(set(published)) != len(published):
        bad.append("a report id was published twice")
    counted_total = 0
    for ln in lanes:
        name, roles = ln["lane"], ln["roles"]
        mine = [t for t in turns if t["lane"] == name]
        counted = [t for t in mine if t["status"] in ("valid", "failed")]
        counted_total += len(counted)
        numbers = [t["number"] for t in counted]
        if numbers != list(range(1, len(counted) + 1)):
            bad.append(f"{name}: recorded turn numbers are {numbers}, not 1..{len(counted)}")
        if ln["turns"] != len(counted):
            bad.append(f"{name}: lane says {ln['turns']} turns, {len(counted)} are recorded")
        for t in mine:
            want = roles[(t["number"] - 1) % 2]
            if t["role"] != want:
                bad.append(
                    f"{name}: turn {t['number']} attempt {t['attempt']} taken by "
                    f"{t['role']}, alternation wants {want}"
                )
        keys = [(t["number"], t["attempt"]) for t in mine]
        if len(set(keys)) != len(keys):
            bad.append(f"{name}: a (turn, attempt) is recorded twice")
        pubs = [rep for rep in reports if rep.lane == name]
        if len(pubs) != len(counted):
            bad.append(f"{name}: {len(counted)} recorded turns but {len(pubs)} published reports")
        # Delivery: in order, nothing skipped, nothing after its acknowledgement.
        cursor: dict[str, int] = {}
        for t in sorted(mine, key=lambda t: t["id"]):
            inbox_file = Path(t["io_dir"] or "") / "inbox.json"
            try:
                # The lane may have rewritten its copy: no link, no FIFO, any JSON.
                delivered = json.loads(read_regular_file(inbox_file, 64 << 20))
            except (OSError, ValueError, RecursionError):
                delivered = []
            got: dict[str, list[int]] = {}
            for d in delivered if isinstance(delivered, list) else []:
                rid = d.get("report_id") if isinstance(d, dict) else d
                if not isinstance(rid, str) or rid not in seq_of:
                    bad.append(f"{name}: turn {t['number']} got unknown report {rid!r}")
                    continue
                got.setdefault(lane_of[rid], []).append(seq_of[rid])
            for source, seqs in got.items():
                if source == name:
                    bad.append(f"{name}: turn {t['number']} received its own report")
                start = cursor.get(source, 0)
                if min(seqs) <= start:
                    bad.append(
                        f"{name}: turn {t['number']} re-received a report of {source} "
                        "after acknowledging it"
                    )
                expected = [
                    rep.seq
                    for rep in reports
                    if rep.lane == source and start < rep.seq <= max(seqs)
                ]
                if sorted(seqs) != expected:
                    bad.append(f"{name}: turn {t['number']} skipped reports of {source}")
            if t["status"] == "valid":
                for source, seqs in got.items():
                    cursor[source] = max(seqs)
        for source, seq in cursors[name].items():
            if cursor.get(source, 0) != seq:
                bad.append(
                    f"{name}: stored cursor on {source} is {seq}, the turns say "
                    f"{cursor.get(source, 0)}"
                )
    if turn_limit is not None and counted_total > turn_limit:
        bad.append(f"{counted_total} turns recorded, budget.turns was {turn_limit}")
    store = BlobStore(run_dir / "blobs")
    for a in artifacts:
        if not store.verify(a["sha256"]):
            bad.append(f"artifact {a['path']} of {a['report_id']} no longer matches its hash")
    return bad


def summary(run_dir: Path) -> dict[str, Any]:
    with Reader(run_dir / "run.db") as r:
        return {
            "status": r.run()["status"],
            "turns": r.spend()["turns"],
            "reports": len(r.reports()),
            "artifacts": len(r.artifacts()),
        }
