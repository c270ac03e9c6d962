"""The run database: its file, how it is opened, and the one writer, the control loop's.

WAL mode with synchronous=FULL: a commit is on disk before `transaction()` returns, and
readers (`status`, `events --follow`, `show`, `serve`: `store/reader.py`) never block the
writer nor take its lock. Callers get named operations, never raw SQL.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flamechase.errors import StoreError
from flamechase.store.schema import MIGRATIONS

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


def connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    """A connection to the run database at `path`: read-only (a view's), or the writer's
    (WAL, synchronous=FULL)."""
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


class Writer:
    """The single writer. Only the engine's control loop holds one."""

    def __init__(self, path: Path, tracer: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.conn = connect(path, readonly=False)
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
