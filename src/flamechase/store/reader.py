"""Read-only views of a run database: what `status`, `events`, `show`, `serve`, the replay
and the engine's own checks read, safe while the run is live (WAL: a reader never blocks the
writer, `store/db.py`, nor takes its lock). Callers get named queries, never raw SQL.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flamechase.errors import StoreError
from flamechase.store.db import connect

# A lane's last turn end: its kinds are exactly the terms of the partial index
# events_turn_ends (SQLite uses a partial index only for a query that repeats its WHERE).
_LAST_TURN_END = (
    "SELECT json_extract(payload, '$.host') AS host FROM events WHERE lane = ? AND kind IN"
    " ('turn_valid', 'turn_failed', 'turn_interrupted', 'lane_paused') ORDER BY seq DESC LIMIT 1"
)

# The lanes with a cut turn found one by one (the next lane after the last, each a probe of
# the partial index turns_cut: SQLite has no skip-scan of it), then each lane's last cut turn
# (its newest entry there) and whether a valid or failed turn of its number followed (the
# (lane, number, attempt) key). The terms repeat the index's WHERE, as SQLite needs.
_OWED_RETAKES = """
WITH RECURSIVE cut_lanes(lane) AS (
    SELECT (SELECT min(lane) FROM turns
            WHERE status IN ('interrupted', 'limited') AND counted = 1)
    UNION ALL
    SELECT (SELECT min(lane) FROM turns
            WHERE status IN ('interrupted', 'limited') AND counted = 1 AND lane > cut_lanes.lane)
    FROM cut_lanes WHERE cut_lanes.lane IS NOT NULL
)
SELECT c.lane FROM cut_lanes
JOIN turns c ON c.id = (
    SELECT max(id) FROM turns
    WHERE lane = cut_lanes.lane AND status IN ('interrupted', 'limited') AND counted = 1
)
WHERE c.lane != '' AND NOT EXISTS (
    SELECT 1 FROM turns d WHERE d.lane = c.lane AND d.number = c.number
    AND d.status IN ('valid', 'failed') AND d.counted = 1
)
"""


@dataclass(frozen=True, slots=True)
class Delivery:
    seq: int
    report_id: str
    lane: str
    kind: str
    record: dict[str, Any]
    bytes: int


class Reader:
    """Read-only view of one run database; safe while the run is live."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise StoreError(f"no run database at {path}")
        self.path = path
        self.conn = connect(path, readonly=True)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _q(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read run database {self.path}: {exc}") from exc

    def run(self) -> dict[str, Any]:
        rows = self._q("SELECT * FROM run")
        if not rows:
            raise StoreError(f"run database {self.path} holds no run")
        d = dict(rows[0])
        for k in ("params", "budget", "agents", "plan"):
            if d.get(k) is not None:
                d[k] = json.loads(d[k])
        return d

    def lanes(self) -> list[dict[str, Any]]:
        out = []
        for r in self._q("SELECT * FROM lanes ORDER BY position"):
            d = dict(r)
            d["roles"] = json.loads(d["roles"])
            d["held"] = bool(d["held"])
            out.append(d)
        return out

    def inflight(self) -> list[dict[str, Any]]:
        out = []
        for r in self._q("SELECT * FROM inflight"):
            d = dict(r)
            d["acks"] = json.loads(d["acks"])
            out.append(d)
        return out

    def procs(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._q("SELECT * FROM procs")]

    def turns(self, lane: str | None = None) -> list[dict[str, Any]]:
        if lane is None:
            rows = self._q("SELECT * FROM turns ORDER BY id")
        else:
            rows = self._q("SELECT * FROM turns WHERE lane = ? ORDER BY id", (lane,))
        out = []
        for r in rows:
            d = dict(r)
            if d["report"] is not None:
                d["report"] = json.loads(d["report"])
            out.append(d)
        return out

    def turn_of(self, slot: str, number: int) -> tuple[str | None, bool]:
        """Turn `number` of `slot` (a lane, or `@role`): the role of its first attempt and
        whether an attempt was valid, through the (lane, number, attempt) key."""
        r = self._q(
            "SELECT (SELECT role FROM turns WHERE lane = ?1 AND number = ?2 ORDER BY attempt"
            " LIMIT 1) AS role, EXISTS (SELECT 1 FROM turns WHERE lane = ?1 AND number = ?2"
            " AND status = 'valid') AS valid",
            (slot, number),
        )[0]
        return r["role"], bool(r["valid"])

    def solo_turns(self) -> list[dict[str, Any]]:
        """Per role that takes turns outside lanes (slot `@role`): its turns (valid and
        failed), valid ones, and the error of its last turn, in the order they first ran."""
        rows = self._q(
            "SELECT lane, role, min(id) AS first,"
            " count(*) FILTER (WHERE status IN ('valid','failed')) AS turns,"
            " count(*) FILTER (WHERE status = 'valid') AS valid,"
            " (SELECT error FROM turns t WHERE t.lane = turns.lane ORDER BY id DESC LIMIT 1)"
            " AS last_error"
            " FROM turns WHERE lane >= '@' AND lane < 'A' GROUP BY lane ORDER BY first"
        )
        return [dict(r) for r in rows]

    def spend_by_agent(self) -> dict[tuple[str, str], dict[str, float]]:
        """Per role and the agent its turns ran on: turns (every attempt, a usage window's
        and a failed start's too) and what they cost."""
        rows = self._q(
            "SELECT role, backend, count(*) AS turns, coalesce(sum(cost_usd), 0) AS cost"
            " FROM turns GROUP BY role, backend"
        )
        return {(r["role"], r["backend"]): {"turns": r["turns"], "cost": r["cost"]} for r in rows}

    def spend(self) -> dict[str, float]:
        """Counted turns, cost and tokens so far: the one row the writer keeps (a database
        older than migration 3 is summed)."""
        try:
            rows = self._q("SELECT turns, cost, output_tokens, input_tokens FROM spend")
        except StoreError:  # no spend table yet: an older database, opened read-only
            rows = self._q(
                "SELECT count(*) FILTER (WHERE status IN ('valid','failed') AND counted = 1)"
                " AS turns, coalesce(sum(cost_usd),0) AS cost,"
                " coalesce(sum(output_tokens),0) AS output_tokens,"
                " coalesce(sum(input_tokens),0) AS input_tokens FROM turns"
            )
        r = rows[0]
        return {k: r[k] for k in ("turns", "cost", "output_tokens", "input_tokens")}

    def owed_retakes(self) -> set[str]:
        """Lanes whose last cut counted turn (interrupted, limited) was not taken again
        (no valid or failed counted turn of the same number): one probe of the cut turns'
        index (migration 3) a lane, however many turns were cut."""
        rows = self._q(_OWED_RETAKES)
        return {str(r["lane"]) for r in rows}

    def cursors(self, consumer: str) -> dict[str, int]:
        return {
            r["source"]: r["seq"]
            for r in self._q("SELECT source, seq FROM cursors WHERE consumer = ?", (consumer,))
        }

    def reports_after(self, source: str, seq: int, limit: int) -> list[Delivery]:
        return [
            Delivery(
                r["seq"], r["report_id"], r["lane"], r["kind"], json.loads(r["record"]), r["bytes"]
            )
            for r in self._q(
                "SELECT * FROM reports WHERE lane = ? AND seq > ? ORDER BY seq LIMIT ?",
                (source, seq, limit),
            )
        ]

    def reports(self) -> list[Delivery]:
        return [
            Delivery(
                r["seq"], r["report_id"], r["lane"], r["kind"], json.loads(r["record"]), r["bytes"]
            )
            for r in self._q("SELECT * FROM reports ORDER BY seq")
        ]

    def artifacts(self, report_id: str | None = None) -> list[dict[str, Any]]:
        if report_id is None:
            return [dict(r) for r in self._q("SELECT * FROM artifacts ORDER BY report_id, path")]
        return [
            dict(r)
            for r in self._q(
                "SELECT * FROM artifacts WHERE report_id = ? ORDER BY path", (report_id,)
            )
        ]

    def measurements(self) -> list[dict[str, Any]]:
        out = []
        for r in self._q("SELECT * FROM measurements ORDER BY at"):
            d = dict(r)
            d["receipt"] = json.loads(d["receipt"])
            out.append(d)
        return out

    def measurement(self, key: str) -> dict[str, Any] | None:
        """The receipt recorded under `key`, if any."""
        rows = self._q("SELECT receipt FROM measurements WHERE key = ?", (key,))
        return json.loads(rows[0]["receipt"]) if rows else None

    def places(self) -> dict[str, dict[str, Any]]:
        return {r["name"]: dict(r) for r in self._q("SELECT * FROM places")}

    def flow_state(self) -> dict[str, Any] | None:
        rows = self._q("SELECT * FROM flow_state WHERE id = 1")
        if not rows:
            return None
        d = dict(rows[0])
        d["summary"] = json.loads(d["summary"])
        return d

    def events(self, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        out = []
        for r in self._q("SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)):
            d = dict(r)
            d["payload"] = json.loads(d["payload"])
            out.append(d)
        return out

    def lane_hosts(self) -> dict[str, str | None]:
        """Per lane, where its last ended turn ran: "HOST, node ID" when on another machine
        (a Ray node), None when here."""
        # One probe of events_turn_ends a lane (migration 4), however long the run.
        out: dict[str, str | None] = {}
        for lane in self._q("SELECT lane FROM lanes"):
            rows = self._q(_LAST_TURN_END, (lane["lane"],))
            if rows:
                out[lane["lane"]] = rows[0]["host"]
        return out

    def last_event(self, kinds: tuple[str, ...]) -> dict[str, Any] | None:
        """The newest event of one of `kinds`, as a row."""
        # One index probe per kind (events_kind), however long the run.
        newest = " UNION ALL ".join(
            "SELECT max(seq) AS s FROM events WHERE kind = ?" for _ in kinds
        )
        rows = self._q(
            f"SELECT * FROM events WHERE seq = (SELECT max(s) FROM ({newest}))",  # noqa: S608
            kinds,
        )
        if not rows:
            return None
        d = dict(rows[0])
        d["payload"] = json.loads(d["payload"])
        return d

    def kinds(self) -> list[str]:
        """Every kind of event the run journaled, in order: one probe of the kinds' index
        (events_kind) a kind, however many events there are."""
        out: list[str] = []
        rows = self._q("SELECT min(kind) AS k FROM events")
        while rows and rows[0]["k"] is not None:
            out.append(str(rows[0]["k"]))
            rows = self._q("SELECT min(kind) AS k FROM events WHERE kind > ?", (out[-1],))
        return out

    def events_except(
        self, kinds: tuple[str, ...], after: int = 0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Events after seq `after` of kinds other than `kinds`, oldest first, at most `limit`."""
        marks = ",".join("?" for _ in kinds)
        out = []
        for r in self._q(
            f"SELECT * FROM events WHERE seq > ? AND kind NOT IN ({marks}) "  # noqa: S608
            "ORDER BY seq LIMIT ?",
            (after, *kinds, limit),
        ):
            d = dict(r)
            d["payload"] = json.loads(d["payload"])
            out.append(d)
        return out

    def events_of(self, kind: str, after: int = 0) -> list[dict[str, Any]]:
        """Every event of `kind` after seq `after`, oldest first."""
        out = []
        for r in self._q(
            "SELECT * FROM events WHERE kind = ? AND seq > ? ORDER BY seq", (kind, after)
        ):
            d = dict(r)
            d["payload"] = json.loads(d["payload"])
            out.append(d)
        return out

    def meta(self, key: str) -> Any:
        rows = self._q("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0]["value"]) if rows else None

    def metas(self, prefix: str) -> dict[str, Any]:
        """Every meta value whose key starts with `prefix`, by the rest of the key."""
        rows = self._q(
            "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)
        )
        return {r["key"][len(prefix) :]: json.loads(r["value"]) for r in rows}

    def sessions(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._q("SELECT * FROM sessions ORDER BY n")]
