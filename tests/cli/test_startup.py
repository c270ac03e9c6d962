"""`flamechase --help` lists every command without importing any of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from flamechase.cli import SHORT_HELP, _register, cli

# The libraries a command pulls in and a listing must not.
HEAVY = ("pydantic", "yaml", "flamechase.flow", "flamechase.events", "flamechase.engine")


def _imported_by(args: list[str]) -> set[str]:
    probe = (
        "import sys\n"
        "from flamechase.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert "Commands:" in done.stdout or args != ["--help"], done.stdout
    return set(done.stderr.split())


def test_help_lists_commands_without_importing_pydantic_yaml_or_the_engine() -> None:
    loaded = _imported_by(["--help"])
    assert not {m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)}


def test_a_bare_flamechase_off_a_terminal_is_as_light_as_help() -> None:
    loaded = _imported_by([])
    assert "pydantic" not in loaded and "yaml" not in loaded


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_each_listed_help_is_what_its_command_says(width: int) -> None:
    _register()
    ctx = click.Context(cli)
    names = cli.list_commands(ctx)
    assert sorted(SHORT_HELP) == names, "every command needs its line in cli.SHORT_HELP"
    limit = width - 6 - max(map(len, names))
    for name in names:
        real = cli.get_command(ctx, name)
        assert real is not None
        listed = click.Command(name, help=SHORT_HELP[name])
        assert listed.get_short_help_str(limit) == real.get_short_help_str(limit), name


# What `exec` has no use for before its first agent starts: the config file's parser (only
# with -c), gc's archiver and the rest of gc, git flows' fetching and importing.
NOT_BEFORE_THE_FIRST_AGENT = (
    "yaml",
    "tarfile",
    "flamechase.engine.reclaim",
    "flamechase.loader.gitsource",
    "flamechase.loader.pinned",
)

FIRST_SPAWN = """
import gc, json, os, sys
from flamechase.procs import spawn

async def first(*args, **kwargs):
    from flamechase.reports import TurnReport
    seen = {"modules": sorted(sys.modules), "collecting": gc.isenabled(),
            "frozen": gc.get_freeze_count(), "report_built": TurnReport.__pydantic_complete__}
    with open(sys.argv[1], "w") as out:
        json.dump(seen, out)
    os._exit(0)

spawn.Proc.start = first
from flamechase.cli import main
main(sys.argv[2:])
"""


def _until_first_spawn(tmp_path: Path, script: str, turns: int) -> Any:
    """What `script` (a flamechase exec stopped at its first agent's spawn) wrote."""
    ws = tmp_path / "ws"
    ws.mkdir()
    seen = tmp_path / "seen.json"
    argv = ["exec", "-f", "flame_chase", "-a", "exec:/bin/true", "-a", "exec:/bin/true"]
    argv += ["-p", f"budget.turns={turns},sandbox=off", "task"]
    done = subprocess.run(
        [sys.executable, "-c", script, str(seen), *argv],
        cwd=ws,
        env={**os.environ, "FLAMECHASE_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert seen.is_file(), done.stderr
    return json.loads(seen.read_text())


def _at_first_spawn(tmp_path: Path) -> dict[str, Any]:
    return dict(_until_first_spawn(tmp_path, FIRST_SPAWN, turns=1))


def test_exec_reaches_its_first_agent_without_what_it_does_not_need(tmp_path: Path) -> None:
    loaded = set(_at_first_spawn(tmp_path)["modules"])
    assert "flamechase.engine.loop" in loaded  # it did reach the spawn
    assert not loaded & set(NOT_BEFORE_THE_FIRST_AGENT)


def test_exec_collects_garbage_once_its_engine_runs_with_the_start_up_frozen(
    tmp_path: Path,
) -> None:
    seen = _at_first_spawn(tmp_path)
    assert seen["collecting"]  # the start-up's pause of the collector is over
    assert seen["frozen"] > 10_000  # what the imports made is left out of every collection


def test_exec_builds_the_turn_reports_validators_only_once_a_report_is_read(
    tmp_path: Path,
) -> None:
    assert _at_first_spawn(tmp_path)["report_built"] is False


# The run database's writes up to the first agent, as (statement, synchronous mode) pairs.
COMMITS_AT_FIRST_SPAWN = """
import json, os, sys
from flamechase.procs import spawn
from flamechase.store import db

seen = []
sync = ["FULL"]
opened = db.connect

def connect(path, *, readonly):
    conn = opened(path, readonly=readonly)
    if not readonly:
        def trace(sql):
            if sql.startswith("PRAGMA synchronous="):
                sync[0] = sql.partition("=")[2]
            elif sql == "COMMIT":
                seen.append(sync[0])
        conn.set_trace_callback(trace)
    return conn

db.connect = connect

async def first(*args, **kwargs):
    with open(sys.argv[1], "w") as out:
        json.dump(seen, out)
    os._exit(0)

spawn.Proc.start = first
from flamechase.cli import main
main(sys.argv[2:])
"""


def test_exec_flushes_the_disk_four_times_before_its_first_agent(tmp_path: Path) -> None:
    """A new run's database is made in one commit (every migration), its session and its
    row in one each, and everything recorded before the first turn (notices, directories,
    `running`) in one; the first turn's start is not flushed. Each durable commit is an
    fdatasync the first agent waits for (there were twelve)."""
    commits = _until_first_spawn(tmp_path, COMMITS_AT_FIRST_SPAWN, turns=2)
    assert commits == ["FULL", "FULL", "FULL", "FULL", "NORMAL"]


def test_the_exec_command_module_leaves_asyncio_to_its_start_up() -> None:
    # Everything a start imports is imported with the collector paused (exec_cmd.start_up),
    # asyncio with the rest: the module click loads to find the command imports none of it.
    probe = "import sys, flamechase.cli.exec_cmd; print('asyncio' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "False", done.stderr
