"""Numbered migrations of the run database; applied ones are recorded in `migrations`."""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: the whole first schema.
    """
    CREATE TABLE run (
        id TEXT PRIMARY KEY,
        flow TEXT NOT NULL,
        workspace TEXT NOT NULL,
        task TEXT NOT NULL,
        task_fingerprint TEXT NOT NULL,
        status TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        params TEXT NOT NULL,
        budget TEXT NOT NULL,
        agents TEXT NOT NULL,
        active_seconds REAL NOT NULL DEFAULT 0,
        last_error TEXT,
        plan TEXT,
        replans INTEGER NOT NULL DEFAULT 0,
        run_dir TEXT NOT NULL
    );
    CREATE TABLE lanes (
        lane TEXT PRIMARY KEY,
        position INTEGER NOT NULL,
        roles TEXT NOT NULL,
        workspace TEXT NOT NULL,
        turns INTEGER NOT NULL DEFAULT 0,
        valid_turns INTEGER NOT NULL DEFAULT 0,
        next_actor INTEGER NOT NULL DEFAULT 0,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        held INTEGER NOT NULL DEFAULT 0,
        held_reason TEXT,
        last_error TEXT,
        last_status TEXT,
        paused_until TEXT
    );
    -- Every attempt at a turn: valid, failed, interrupted (cut by a stop or a crash) or
    -- limited (a usage window closed). Only valid and failed turns count as turns.
    CREATE TABLE turns (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        lane TEXT NOT NULL,
        number INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        role TEXT NOT NULL,
        backend TEXT NOT NULL,
        status TEXT NOT NULL,
        started TEXT NOT NULL,
        ended TEXT NOT NULL,
        duration REAL NOT NULL,
        report TEXT,
        error TEXT,
        exit_code INTEGER,
        cost_usd REAL NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        recovered_from_checkpoint INTEGER NOT NULL DEFAULT 0,
        io_dir TEXT,
        UNIQUE (lane, number, attempt)
    );
    -- Turns under way. A row here after a crash means the turn was cut.
    CREATE TABLE inflight (
        lane TEXT PRIMARY KEY,
        number INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        role TEXT NOT NULL,
        backend TEXT NOT NULL,
        started TEXT NOT NULL,
        io_dir TEXT NOT NULL,
        acks TEXT NOT NULL DEFAULT '{}',
        pgid INTEGER,
        token TEXT
    );
    CREATE TABLE procs (
        token TEXT PRIMARY KEY,
        pgid INTEGER NOT NULL,
        lane TEXT NOT NULL,
        started TEXT NOT NULL
    );
    CREATE TABLE reports (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        report_id TEXT NOT NULL UNIQUE,
        lane TEXT NOT NULL,
        turn_id INTEGER NOT NULL,
        kind TEXT NOT NULL,
        record TEXT NOT NULL,
        bytes INTEGER NOT NULL
    );
    CREATE INDEX reports_lane ON reports (lane, seq);
    CREATE TABLE cursors (
        consumer TEXT NOT NULL,
        source TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (consumer, source)
    );
    CREATE TABLE artifacts (
        report_id TEXT NOT NULL,
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        description TEXT NOT NULL,
        PRIMARY KEY (report_id, path)
    );
    CREATE TABLE submissions (
        report_id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        at TEXT NOT NULL,
        metric TEXT NOT NULL,
        direction TEXT NOT NULL,
        claimed REAL NOT NULL,
        measured REAL,
        verified INTEGER NOT NULL,
        receipt TEXT,
        best INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        lane TEXT,
        actor TEXT,
        payload TEXT NOT NULL
    );
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE sessions (
        n INTEGER PRIMARY KEY AUTOINCREMENT,
        started TEXT NOT NULL,
        ended TEXT,
        pid INTEGER NOT NULL,
        agents TEXT NOT NULL
    );
    """,
    # 2: the engine core of flows as deciders: the flow's identity and stored state, places,
    # the runtime's measurements, whether a turn counts toward budget.turns, event versions.
    """
    ALTER TABLE run ADD COLUMN flow_source TEXT NOT NULL DEFAULT '';
    ALTER TABLE run ADD COLUMN flow_hash TEXT NOT NULL DEFAULT '';
    ALTER TABLE run ADD COLUMN flow_version TEXT NOT NULL DEFAULT '';
    ALTER TABLE turns ADD COLUMN counted INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE turns ADD COLUMN place TEXT;
    ALTER TABLE inflight ADD COLUMN counted INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE inflight ADD COLUMN place TEXT;
    ALTER TABLE events ADD COLUMN v INTEGER NOT NULL DEFAULT 1;
    -- The flow's state after the last committed event (`seq`), and its summary for views.
    CREATE TABLE flow_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        flow TEXT NOT NULL,
        state TEXT NOT NULL,
        summary TEXT NOT NULL,
        seq INTEGER NOT NULL
    );
    CREATE TABLE places (
        name TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        how TEXT NOT NULL,
        made TEXT NOT NULL
    );
    CREATE TABLE measurements (
        key TEXT PRIMARY KEY,
        lane TEXT,
        at TEXT NOT NULL,
        place TEXT NOT NULL,
        receipt TEXT NOT NULL
    );
    """,
    # 3: what resume and `status` ask, answered without reading every turn or event: the
    # spend kept as one row (insert_turn adds to it), cut turns and events by kind indexed.
    """
    CREATE TABLE spend (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        turns INTEGER NOT NULL,
        cost REAL NOT NULL,
        output_tokens INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL
    );
    INSERT INTO spend
        SELECT 1, count(*) FILTER (WHERE status IN ('valid','failed') AND counted = 1),
               coalesce(sum(cost_usd), 0), coalesce(sum(output_tokens), 0),
               coalesce(sum(input_tokens), 0)
        FROM turns;
    CREATE INDEX turns_cut ON turns (lane, id)
        WHERE status IN ('interrupted', 'limited') AND counted = 1;
    CREATE INDEX events_kind ON events (kind, seq);
    """,
    # 4: where each lane's last turn ran (`status`), found by one probe a lane: the turn ends
    # indexed by lane (`db._LAST_TURN_END` repeats the terms, as SQLite needs).
    """
    CREATE INDEX events_turn_ends ON events (lane, seq)
        WHERE kind IN ('turn_valid', 'turn_failed', 'turn_interrupted', 'lane_paused');
    """,
]
