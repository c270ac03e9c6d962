"""The run database: one writer connection for the control loop, read-only ones for views.

WAL mode with synchronous=FULL: a commit is on disk before `transaction()` returns, and
readers (`status`, `events --follow`, `show`, `serve`) never block the writer nor take its
lock. Callers get named operations, never raw SQL.
"""

# long file: the Writer and the Reader share one schema; their queries read best side by side

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flamechase.errors import StoreError
from flamechase.store.schema import MIGRATIONS

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

DB_NAME = "run.db"

_APPLIED = "SELECT n FROM migrations"


def _has_migrations(conn: sqlite3.Connection) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'"
    ).fetchone()
    return found is not None


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    try:
        if readonly:
            conn = sqlite3.connect(
                f"file:{path}?mode=ro",
                uri=True,
                isolation_level=None,
                timeout=5.0,
                check_same_thread=False,
            )
        else:
            conn = sqlite3.connect(str(path), isolation_level=None, timeout=5.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open run database {path}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    return conn


@dataclass(frozen=True, slots=True)
class Delivery:
    seq: int
    report_id: str
    lane: str
    kind: str
    record: dict[str, Any]
    bytes: int


class Writer:
    """The single writer. Only the engine's control loop holds one."""

    def __init__(self, path: Path, tracer: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.conn = _connect(path, readonly=False)
        if tracer is not None:
            self.conn.set_trace_callback(tracer)
        self._depth = 0
        self._sync = "FULL"
        self._migrate()

    def _migrate(self) -> None:
        """Every migration not applied yet, in one transaction: a new database is made with
        one disk flush, not one per migration, and a crash leaves all of them or none."""
        c = self.conn
        done = {r[0] for r in c.execute(_APPLIED)} if _has_migrations(c) else set()
        if len(done) >= len(MIGRATIONS):
            return
        try:
            c.execute("BEGIN IMMEDIATE")
            c.execute("CREATE TABLE IF NOT EXISTS migrations (n INTEGER PRIMARY KEY, at TEXT)")
            done = {r[0] for r in c.execute(_APPLIED)}  # under the lock: what is applied now
            for n, script in enumerate(MIGRATIONS, start=1):
                if n in done:
                    continue
                for stmt in script.split(";"):
                    if stmt.strip():
                        c.execute(stmt)
                c.execute("INSERT INTO migrations VALUES (?, ?)", (n, now_iso()))
            c.execute("COMMIT")
        except sqlite3.Error as exc:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise StoreError(f"cannot migrate run database {self.path}: {exc}") from exc

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[None]:
        """All writes inside land together or not at all.

        `durable`: fsync at commit (synchronous=FULL), so the transaction survives power
        loss. Bookkeeping that a crash may lose without harm (a turn *starting*) passes
        False: it still survives a crash of this process, and saves a disk flush per turn.
        """
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        want = "FULL" if durable else "NORMAL"
        if want != self._sync:
            self.conn.execute(f"PRAGMA synchronous={want}")
            self._sync = want
        self.conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")
        finally:
            self._depth = 0

    def _x(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        if not self._depth:
            with self.transaction():
                return self.conn.execute(sql, params)
        return self.conn.execute(sql, params)

    # ---- run -----------------------------------------------------------------------------

    def create_run(
        self,
        *,
        run_id: str,
        flow: str,
        workspace: str,
        task: str,
        fingerprint: str,
        params: dict[str, Any],
        budget: dict[str, Any],
        agents: dict[str, Any],
        run_dir: str,
        flow_source: str = "",
        flow_hash: str = "",
        flow_version: str = "",
    ) -> None:
        t = now_iso()
        self._x(
            "INSERT INTO run (id, flow, workspace, task, task_fingerprint, status, created,"
            " updated, params, budget, agents, run_dir, flow_source, flow_hash, flow_version)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                flow,
                workspace,
                task,
                fingerprint,
                "starting",
                t,
                t,
                _dumps(params),
                _dumps(budget),
                _dumps(agents),
                run_dir,
                flow_source,
                flow_hash,
                flow_version,
            ),
        )

    def update_run(self, **fields: Any) -> None:
        allowed = {
            "status",
            "last_error",
            "plan",
            "replans",
            "budget",
            "agents",
            "task",
            "task_fingerprint",
            "active_seconds",
            "params",
            "flow_hash",
            "flow_version",
            "flow_source",
        }
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"unknown run fields {sorted(bad)}")
        cols = []
        vals: list[Any] = []
        for k, v in fields.items():
            cols.append(f"{k} = ?")
            vals.append(
                _dumps(v) if k in {"plan", "budget", "agents", "params"} and v is not None else v
            )
        cols.append("updated = ?")
        vals.append(now_iso())
        self._x(f"UPDATE run SET {', '.join(cols)}", tuple(vals))  # noqa: S608 -- fixed names

    def open_session(self, pid: int, agents: dict[str, Any]) -> int:
        cur = self._x(
            "INSERT INTO sessions (started, pid, agents) VALUES (?,?,?)",
            (now_iso(), pid, _dumps(agents)),
        )
        return int(cur.lastrowid or 0)

    def close_session(self, n: int) -> None:
        self._x("UPDATE sessions SET ended = ? WHERE n = ?", (now_iso(), n))

    # ---- lanes ---------------------------------------------------------------------------

    def add_lane(self, lane: str, position: int, roles: list[str], workspace: str) -> None:
        self._x(
            "INSERT INTO lanes (lane, position, roles, workspace) VALUES (?,?,?,?)",
            (lane, position, _dumps(roles), workspace),
        )

    def update_lane(self, lane: str, **fields: Any) -> None:
        allowed = {
            "turns",
            "valid_turns",
            "next_actor",
            "consecutive_failures",
            "held",
            "held_reason",
            "last_error",
            "last_status",
            "paused_until",
            "roles",
            "workspace",
        }
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"unknown lane fields {sorted(bad)}")
        sets = ", ".join(f"{k} = ?" for k in fields)
        vals = [(_dumps(v) if k == "roles" else v) for k, v in fields.items()]
        self._x(f"UPDATE lanes SET {sets} WHERE lane = ?", (*vals, lane))  # noqa: S608

    # ---- turns ---------------------------------------------------------------------------

    def begin_turn(
        self,
        *,
        lane: str,
        number: int,
        attempt: int,
        role: str,
        backend: str,
        io_dir: str,
        acks: dict[str, int],
        started: str,
        token: str,
        counted: bool,
        place: str,
    ) -> None:
        """A turn under way (`lane`: its slot); its token finds its processes after a crash."""
        self._x(
            "INSERT INTO inflight (lane, number, attempt, role, backend, started, io_dir, acks,"
            " token, counted, place) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                lane,
                number,
                attempt,
                role,
                backend,
                started,
                io_dir,
                _dumps(acks),
                token,
                int(counted),
                place,
            ),
        )
        self._x("INSERT OR REPLACE INTO procs VALUES (?,?,?,?)", (token, 0, lane, started))

    def forget_procs(self, tokens: list[str]) -> None:
        for t in tokens:
            self._x("DELETE FROM procs WHERE token = ?", (t,))

    def end_inflight(self, lane: str) -> None:
        self._x("DELETE FROM inflight WHERE lane = ?", (lane,))

    def insert_turn(self, **row: Any) -> int:
        report = row.get("report")
        if report is not None:
            row["report"] = _dumps(report)
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        counts = row.get("status") in ("valid", "failed") and row.get("counted", 1)
        with self.transaction():
            cur = self.conn.execute(
                f"INSERT INTO turns ({cols}) VALUES ({marks})",  # noqa: S608
                tuple(row.values()),
            )
            # The kept spend: what resume and `status` read instead of summing every turn.
            self.conn.execute(
                "UPDATE spend SET turns = turns + ?, cost = cost + ?,"
                " output_tokens = output_tokens + ?, input_tokens = input_tokens + ?",
                (
                    1 if counts else 0,
                    float(row.get("cost_usd") or 0),
                    int(row.get("output_tokens") or 0),
                    int(row.get("input_tokens") or 0),
                ),
            )
        return int(cur.lastrowid or 0)

    # ---- reports, cursors, artifacts, submissions ------------------------------------------

    def publish_report(
        self, *, report_id: str, lane: str, turn_id: int, kind: str, record: dict[str, Any]
    ) -> int:
        """Its seq in the report log; 0 (nothing written) if `report_id` is there already."""
        if self.conn.execute("SELECT 1 FROM reports WHERE report_id = ?", (report_id,)).fetchone():
            return 0
        text = _dumps(record)
        cur = self._x(
            "INSERT INTO reports (report_id, lane, turn_id, kind, record, bytes)"
            " VALUES (?,?,?,?,?,?)",
            (report_id, lane, turn_id, kind, text, len(text.encode())),
        )
        return int(cur.lastrowid or 0)

    def acknowledge(self, consumer: str, acks: dict[str, int]) -> None:
        for source, seq in acks.items():
            self._x(
                "INSERT INTO cursors VALUES (?,?,?) ON CONFLICT (consumer, source)"
                " DO UPDATE SET seq = max(seq, excluded.seq)",
                (consumer, source, seq),
            )

    def add_artifact(
        self, report_id: str, path: str, sha256: str, size: int, description: str
    ) -> None:
        self._x(
            "INSERT INTO artifacts VALUES (?,?,?,?,?)", (report_id, path, sha256, size, description)
        )

    def add_measurement(
        self, *, key: str, lane: str | None, at: str, place: str, receipt: dict[str, Any]
    ) -> None:
        self._x(
            "INSERT OR REPLACE INTO measurements VALUES (?,?,?,?,?)",
            (key, lane, at, place, _dumps(receipt)),
        )

    def add_place(self, name: str, path: str, how: str) -> None:
        self._x("INSERT OR REPLACE INTO places VALUES (?,?,?,?)", (name, path, how, now_iso()))

    def drop_place(self, name: str) -> None:
        self._x("DELETE FROM places WHERE name = ?", (name,))

    def save_flow_state(self, *, flow: str, state: str, summary: dict[str, Any], seq: int) -> None:
        self._x(
            "INSERT OR REPLACE INTO flow_state VALUES (1,?,?,?,?)",
            (flow, state, _dumps(summary), seq),
        )

    # ---- events --------------------------------------------------------------------------

    def event(
        self,
        kind: str,
        *,
        lane: str | None = None,
        actor: str | None = None,
        payload: dict[str, Any] | None = None,
        at: str | None = None,
        version: int = 1,
    ) -> int:
        """Append one event; its seq."""
        cur = self._x(
            "INSERT INTO events (at, kind, lane, actor, payload, v) VALUES (?,?,?,?,?,?)",
            (at or now_iso(), kind, lane, actor, _dumps(payload or {}), version),
        )
        return int(cur.lastrowid or 0)

    def set_meta(self, key: str, value: Any) -> None:
        self._x("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, _dumps(value)))


class Reader:
    """Read-only view of one run database; safe while the run is live."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise StoreError(f"no run database at {path}")
        self.path = path
        self.conn = _connect(path, readonly=True)

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
