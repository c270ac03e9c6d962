"""A run database is made, or brought up to date, in one transaction: one disk flush for a
new run instead of one per migration, and a crash leaves every migration applied or none."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from flamechase.errors import StoreError
from flamechase.store import db
from flamechase.store.db import Writer
from flamechase.store.schema import MIGRATIONS


def _applied(path: Path) -> list[int]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT n FROM migrations ORDER BY n")]


def test_a_new_run_database_is_made_in_one_commit(tmp_path: Path) -> None:
    said: list[str] = []
    Writer(tmp_path / "run.db", tracer=said.append).close()
    assert said.count("COMMIT") == 1
    assert said.count("BEGIN IMMEDIATE") == 1
    assert _applied(tmp_path / "run.db") == list(range(1, len(MIGRATIONS) + 1))


def test_an_up_to_date_database_opens_without_a_write(tmp_path: Path) -> None:
    Writer(tmp_path / "run.db").close()
    said: list[str] = []
    Writer(tmp_path / "run.db", tracer=said.append).close()
    assert not [s for s in said if s.startswith(("BEGIN", "COMMIT", "INSERT", "CREATE"))]


def test_a_migration_that_fails_leaves_a_new_database_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "MIGRATIONS", [*MIGRATIONS, "CREATE TABLE run (again TEXT)"])
    path = tmp_path / "run.db"
    with pytest.raises(StoreError, match="cannot migrate"):
        Writer(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []
