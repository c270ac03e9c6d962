"""Flows with mistakes in them, through `flamechase exec` (tests/engine/mistakes.py): one line
naming the flow and what it asked for, exit 1 and the run recorded as failed with that line
(exit 2 and no run for a flow refused before its run is made), never a traceback; `--debug`
prints the flow's own."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.engine.mistakes import BY_NAME, MISTAKES, VERDICT, Mistake, flow_file
from tests.helpers import REPORT_OK, actor, cli, status

# A verdict where the flow asks for one (its prompt says so), else a turn report.
REVIEW = f"""
if grep -q verdict "$FLAMECHASE_PROMPT"; then
  echo '{json.dumps(VERDICT)}' > "$FLAMECHASE_REPORT"
else
  {REPORT_OK}fi
"""


def exec_flow(
    tmp_path: Path, m: Mistake, *extra: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "README.md").write_text("sample\n")
    author = actor(tmp_path, "author.sh", REPORT_OK)
    reviewer = actor(tmp_path, "reviewer.sh", REVIEW)
    proc = cli(
        *extra,
        "exec",
        "-f",
        str(flow_file(tmp_path, m)),
        "-a",
        f"author=exec:{author}",
        "-a",
        f"reviewer=exec:{reviewer}",
        "-p",
        "budget.turns=6,rest_seconds=0.05",
        "do it",
        cwd=ws,
        timeout=120,
    )
    return proc, ws


@pytest.mark.parametrize("m", MISTAKES, ids=lambda m: m.name)
def test_a_mistake_in_a_flow_is_one_line_from_exec(m: Mistake, tmp_path: Path) -> None:
    proc, ws = exec_flow(tmp_path, m)
    assert proc.returncode == (1 if m.when == "run" else 2), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "internal error" not in proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("flamechase")]
    for words in m.words:
        assert words in line, line
    if m.when != "run":  # refused before a run was made
        assert "error:" in line
        assert not list((tmp_path / "fc-home").glob("runs/*/run.db"))
        return
    st = status(ws)
    assert st["status"] == "failed"
    # The run's one end line names the recorded error, then what the run spent.
    assert f"failed: {st['last_error']}" in line and "flow mistake" in st["last_error"]
    kept = tmp_path / "fc-home" / "runs" / st["id"] / "flow-traceback.txt"
    assert kept.exists() == m.traceback
    if m.traceback:
        assert f"its traceback: {kept}" in line


def test_debug_prints_the_flows_own_traceback(tmp_path: Path) -> None:
    proc, _ = exec_flow(tmp_path, BY_NAME["decide_raises"], "--debug")
    assert proc.returncode == 1
    assert 'decide_raises.py", line' in proc.stderr
    assert "number=1 // state.done" in proc.stderr
    assert "flamechase/engine" not in proc.stderr  # the flow's frames, not the engine's


def test_a_flow_whose_declarations_raise_says_debug_shows_why(tmp_path: Path) -> None:
    proc, _ = exec_flow(tmp_path, BY_NAME["roles_raise"])
    assert proc.stderr.strip().endswith("--debug shows the flow's traceback")
    proc, _ = exec_flow(tmp_path, BY_NAME["roles_raise"], "--debug")
    assert "roles_raise.py" in proc.stderr and "params.lanes" in proc.stderr


def test_sys_exit_at_import_is_not_a_finished_run(tmp_path: Path) -> None:
    # Before: `exec` exited 0 with no output at all, as if the run had finished.
    proc, _ = exec_flow(tmp_path, BY_NAME["exits_at_import"])
    assert proc.returncode == 2
    assert "failed to import: it called sys.exit(0)" in proc.stderr
