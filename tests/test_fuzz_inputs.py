"""Property: every parser that reads outside data answers with a value or a one-line error.

Issue 6, point 6. Agents write reports, plans, checkpoints, usage files and (in their own lane
directory) inbox copies; users write config YAML. Whatever bytes or JSON shapes arrive, each
parser returns a result or raises its typed error with a single line: never a traceback,
never a hang. (Agent specs, `-p` params, durations and config bytes are fuzzed in
tests/agents/test_spec.py and tests/test_config.py; CLI event streams in
tests/agents/test_parser_fuzz.py.)

FLAMECHASE_FUZZ_EXAMPLES=2000 for a soak.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flamechase.agents.exec_backend import read_usage
from flamechase.config import load_config
from flamechase.engine.invariants import check_run
from flamechase.engine.turns import read_result_file
from flamechase.errors import FlamechaseError
from flamechase.flows.parallel_flame_chase import FLOW
from flamechase.flows.parallel_flame_chase.plans import validate_plan
from flamechase.reports import parse_report
from flamechase.view.replay import ReplayBuilder, render_html
from flamechase.view.replay_pack import read_document
from flamechase.workspace.checkpoints import read_checkpoint

EXAMPLES = int(os.environ.get("FLAMECHASE_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
LANES = [lane.name for lane in FLOW.lanes(FLOW.Params())]


def one_line(text: str) -> bool:
    """A message that prints as one line: no line boundary of any kind inside."""
    return bool(text) and len(text.splitlines()) == 1


# ---- JSON values, biased toward the shapes the parsers look for ------------------------------

# Text with the characters that break messages and paths: line and paragraph separators,
# NUL, backslash, quotes, '..' and '/'.
NASTY = st.text(
    alphabet=st.sampled_from(list("ab/.\\\0\n\r\x0b\x0c\x1c\x85\u2028\u2029\"' <>&é🔥"))
    | st.characters(),
    max_size=24,
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | NASTY
)


def json_values(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        SCALARS,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
        max_leaves=20,
    )


REPORT_KEYS = (
    st.sampled_from(
        [
            "status",
            "summary",
            "changes",
            "evidence",
            "tests",
            "risks",
            "next_step",
            "deliverable",
            "submission",
            "title",
            "artifacts",
            "path",
            "description",
            "integration_notes",
            "approach_class",
            "validation",
            "metric",
            "value",
            "direction",
            "evaluator",
        ]
    )
    | NASTY
)
STATUSES = st.sampled_from(["progress", "deliverable_ready", "no_result", "blocked", "done"])
ARTIFACT = st.fixed_dictionaries(
    {"path": NASTY | st.sampled_from(["a.txt", "../x", "/etc/passwd", "a//b", "./a", "a\0b"])},
    optional={"description": NASTY},
)
DELIVERABLE = st.fixed_dictionaries(
    {"title": NASTY, "artifacts": st.lists(ARTIFACT, max_size=3), "integration_notes": NASTY},
    optional={"validation": st.lists(NASTY, max_size=3), "approach_class": NASTY | st.none()},
)
SUBMISSION = st.fixed_dictionaries(
    {
        "title": NASTY,
        "metric": NASTY,
        "evaluator": NASTY,
        "value": SCALARS,
        "direction": st.sampled_from(["minimize", "maximize", "sideways"]),
    }
)
NEAR_REPORT = st.fixed_dictionaries(
    {"status": STATUSES, "summary": NASTY},
    optional={
        "deliverable": DELIVERABLE | SCALARS,
        "submission": SUBMISSION | SCALARS,
        "changes": st.lists(NASTY, max_size=3) | SCALARS,
        "next_step": SCALARS,
        "extra\nkey": SCALARS,
        "risks": st.lists(SCALARS),
    },
)


@FUZZ
@given(
    json_values(REPORT_KEYS)
    | NEAR_REPORT
    | st.dictionaries(NASTY, json_values(REPORT_KEYS), max_size=4)
)
def test_parse_report_returns_a_report_or_one_line(data: Any) -> None:
    try:
        report = parse_report(data)
    except ValueError as exc:
        assert one_line(str(exc)), repr(str(exc))
        return
    assert report.summary.strip()
    # A report that passed can be stored and delivered as JSON.
    json.dumps(report.model_dump(mode="json"), allow_nan=False)


PLAN_KEYS = (
    st.sampled_from(
        [
            "lanes",
            "lane",
            "mission",
            "title",
            "objective",
            "success_criteria",
            "kind",
            "approach_class",
            "change_scale",
            "information_question",
            "dependencies",
        ]
    )
    | NASTY
)
LANE_NAMES = st.sampled_from([*LANES, "lane-9", "", "lane-1\nlane-2"]) | NASTY
MISSION = st.fixed_dictionaries(
    {"title": NASTY, "objective": NASTY, "success_criteria": st.lists(NASTY, max_size=3)},
    optional={
        "kind": st.sampled_from(["research", "implementation", "other"]),
        "dependencies": st.lists(NASTY, max_size=2) | SCALARS,
        "bogus": SCALARS,
    },
)
NEAR_PLAN = st.fixed_dictionaries(
    {
        "lanes": st.lists(
            st.fixed_dictionaries({"lane": LANE_NAMES, "mission": MISSION | SCALARS}), max_size=5
        )
    }
)


@FUZZ
@given(json_values(PLAN_KEYS) | NEAR_PLAN)
def test_validate_plan_returns_a_plan_or_one_line(data: Any) -> None:
    try:
        plan = validate_plan(data, LANES)
    except ValueError as exc:
        assert one_line(str(exc)), repr(str(exc))
        return
    assert [b["lane"] for b in plan["lanes"]] == LANES


# ---- files an agent writes -------------------------------------------------------------------

FILE_BYTES = (
    st.binary(max_size=400)
    | json_values(REPORT_KEYS).map(lambda v: json.dumps(v).encode())
    | st.integers(min_value=1, max_value=200_000).map(lambda n: b"[" * n)
    | st.integers(min_value=1, max_value=200_000).map(lambda n: b'{"a":' * n)
    | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass"))
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-files")


@FUZZ
@given(raw=FILE_BYTES)
def test_read_result_file_never_raises(scratch: Path, raw: bytes) -> None:
    path = scratch / "report.json"
    path.write_bytes(raw)
    data, problem = read_result_file(path)
    if problem is not None:
        assert data is None
        assert one_line(problem), repr(problem)


def test_read_result_file_refuses_links_fifos_and_huge_files_unread(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text('{"status": "progress", "summary": "not yours"}')
    (tmp_path / "link.json").symlink_to(tmp_path / "secret")
    os.mkfifo(tmp_path / "fifo.json")  # opening it for reading would block
    with open(tmp_path / "huge.json", "wb") as f:
        f.truncate(100 * 1024 * 1024)
    for name in ("link.json", "fifo.json", "huge.json", "missing.json"):
        data, problem = read_result_file(tmp_path / name)
        assert data is None and problem is not None and one_line(problem), (name, problem)


IDENTITY = {"run_id": "20260101T000000Z-abcdef0123", "lane": "lane-2", "turn": 3, "attempt": 1}
CHECKPOINTS = FILE_BYTES | st.fixed_dictionaries(
    {
        "identity": st.fixed_dictionaries(
            {k: st.just(v) | SCALARS for k, v in IDENTITY.items()},
            optional={"phase": st.sampled_from(["terminal", "working"]) | SCALARS},
        )
        | SCALARS,
        "report": json_values(REPORT_KEYS) | NEAR_REPORT,
    }
).map(lambda v: json.dumps(v).encode())


@FUZZ
@given(raw=CHECKPOINTS)
def test_read_checkpoint_never_raises(scratch: Path, raw: bytes) -> None:
    path = scratch / "checkpoint.json"
    path.write_bytes(raw)
    report = read_checkpoint(path, IDENTITY)
    assert report is None or isinstance(report, dict)
    if report is not None:  # what the engine does next with it
        try:
            parse_report(report)
        except ValueError as exc:
            assert one_line(str(exc))


@FUZZ
@given(
    raw=FILE_BYTES
    | json_values(
        st.sampled_from(["cost_usd", "input_tokens", "output_tokens", "cache_read_tokens"]) | NASTY
    ).map(lambda v: json.dumps(v).encode())
)
def test_usage_file_never_fails_a_turn(scratch: Path, raw: bytes) -> None:
    path = scratch / "usage.json"
    path.write_bytes(raw)
    usage, note = read_usage(path)
    assert usage.cost_usd >= 0 and usage.output_tokens >= 0
    assert note is None or one_line(note)


# ---- inbox copies: an agent may rewrite the ones in its own lane directory ---------------------

ACTOR = r"""#!/usr/bin/env python3
import json, os, sys
lane, report = os.environ["FLAMECHASE_LANE"], os.environ["FLAMECHASE_REPORT"]
if lane == "":
    plan = {"lanes": [{"lane": l, "mission": {"title": "t", "objective": "o",
            "success_criteria": ["c"]}} for l in os.environ["FLAMECHASE_LANES"].split(",")]}
    open(report, "w").write(json.dumps(plan)); sys.exit(0)
open(report, "w").write(json.dumps({"status": "progress", "summary": "ok"}))
"""


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small real run (through the CLI) whose inbox copies the fuzz rewrites."""
    base = tmp_path_factory.mktemp("inbox-run")
    ws = base / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("x\n")
    actor = base / "actor.py"
    actor.write_text(ACTOR)
    actor.chmod(0o755)
    env = dict(os.environ, FLAMECHASE_HOME=str(base / "home"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flamechase",
            "exec",
            "-f",
            "parallel_flame_chase",
            *(["-a", f"exec:{actor}"] * 5),
            "-p",
            "lanes=2,budget.turns=4,rest_seconds=0.05,sandbox=off",
            "fuzz inboxes",
        ],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    run_dir = next((base / "home" / "runs").iterdir())
    assert check_run(run_dir) == []
    return run_dir


INBOX = FILE_BYTES | st.lists(
    st.fixed_dictionaries(
        {"report_id": NASTY | st.sampled_from(["lane-1.0001.abcdef"])},
        optional={"lane": NASTY, "report": json_values(REPORT_KEYS)},
    )
    | SCALARS,
    max_size=4,
).map(lambda v: json.dumps(v).encode())


@FUZZ
@given(raw=INBOX)
def test_check_run_reads_any_inbox_copy(finished_run: Path, raw: bytes) -> None:
    inbox = sorted(finished_run.glob("lanes/lane-2/turns/*/inbox.json"))[-1]
    saved = inbox.read_bytes()
    try:
        inbox.write_bytes(raw)
        found = check_run(finished_run)
    finally:
        inbox.write_bytes(saved)
    assert all(isinstance(v, str) and one_line(v) for v in found)


# ---- config YAML built from structures (raw bytes are fuzzed in tests/test_config.py) ---------

CONFIG_KEYS = (
    st.sampled_from(
        [
            "budget",
            "duration",
            "cost",
            "turns",
            "output_tokens",
            "graceful",
            "budget.turns",
            "lanes",
            "rest_seconds",
            "evaluator",
            "sandbox",
        ]
    )
    | NASTY
)
CONFIG_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | NASTY
    | st.dates()
    | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(CONFIG_KEYS, inner, max_size=4),
    max_leaves=12,
)


@FUZZ
@given(doc=CONFIG_VALUES)
def test_load_config_of_any_yaml_document(scratch: Path, doc: Any) -> None:
    path = scratch / "config.yaml"
    try:
        path.write_text(
            yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8", errors="surrogatepass"
        )
    except (yaml.YAMLError, UnicodeEncodeError):
        assume(False)
    try:
        settings_ = load_config(path)
    except FlamechaseError as exc:
        assert one_line(str(exc)), repr(str(exc))
        return
    assert isinstance(settings_, dict)


# ---- the replay's event input -----------------------------------------------------------------

AGENT_TEXT = NASTY | st.just("</script><script>alert(1)</script>")
NUMBER = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**60), 2**60)


def _events() -> st.SearchStrategy[list[dict[str, Any]]]:
    lane = st.sampled_from(["lane-1", "lane-2"])
    payloads = {
        "turn_started": st.fixed_dictionaries(
            {
                "turn": st.integers(1, 9),
                "attempt": st.integers(1, 3),
                "backend": AGENT_TEXT,
                "delivered": st.lists(AGENT_TEXT, max_size=2),
            }
        ),
        "turn_valid": st.fixed_dictionaries(
            {
                "turn": st.integers(1, 9),
                "report_id": AGENT_TEXT,
                "summary": AGENT_TEXT,
                "report_status": STATUSES,
                "cost_usd": NUMBER.map(abs),
                "duration": NUMBER,
                "acknowledged": st.dictionaries(lane, st.integers(0, 5), max_size=2),
            }
        ),
        "turn_failed": st.fixed_dictionaries(
            {"turn": st.integers(1, 9), "error": AGENT_TEXT, "report_id": AGENT_TEXT}
        ),
        "report_published": st.fixed_dictionaries(
            {
                "report_id": AGENT_TEXT,
                "report_status": STATUSES,
                "artifacts": st.lists(st.fixed_dictionaries({"path": AGENT_TEXT}), max_size=2),
            }
        ),
        "candidate_submitted": st.fixed_dictionaries(
            {
                "report_id": AGENT_TEXT,
                "metric": AGENT_TEXT,
                "direction": st.sampled_from(["minimize", "maximize"]),
                "claimed": NUMBER,
                "measured": NUMBER | st.none(),
                "verified": st.booleans(),
                "unverified_reason": AGENT_TEXT | st.none(),
            }
        ),
        "lane_held": st.fixed_dictionaries({"reason": AGENT_TEXT}),
        "notice": st.fixed_dictionaries({"message": AGENT_TEXT}),
    }
    event = st.sampled_from(sorted(payloads)).flatmap(
        lambda kind: st.fixed_dictionaries(
            {
                "kind": st.just(kind),
                "lane": lane,
                "actor": AGENT_TEXT | st.none(),
                "payload": payloads[kind],
            }
        )
    )
    return st.lists(event, max_size=12)


@FUZZ
@given(events=_events())
def test_replay_folds_any_agent_text(events: list[dict[str, Any]]) -> None:
    run = {
        "id": "20260101T000000Z-fuzz",
        "flow": "parallel_flame_chase",
        "status": "running",
        "params": {"evaluator": "sh e.sh", "direction": "minimize"},
        "task": "t",
        "budget": {"turns": 10},
    }
    builder = ReplayBuilder(
        run, [{"lane": "lane-1", "roles": ["a", "b"]}, {"lane": "lane-2", "roles": ["c", "d"]}]
    )
    for seq, ev in enumerate(events, 1):
        builder.add({**ev, "seq": seq, "at": f"2026-01-01T00:00:{seq:02d}.000Z"})
    doc = builder.document()
    page = render_html(doc)
    assert page.lower().count("</script") == 2  # the data's and the script's own
    # Packed into the page and read back, every point is exactly what was built.
    assert read_document(page) == doc


def test_fuzz_files_leave_no_scratch(tmp_path: Path) -> None:
    # Guard against a parser that writes next to what it reads (none should).
    path = tmp_path / "report.json"
    path.write_bytes(b"{}")
    read_result_file(path)
    read_checkpoint(path, IDENTITY)
    read_usage(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
