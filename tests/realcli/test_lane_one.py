"""Lane 1 of flame_chase on each real CLI, through the scripted model server: the report is
written with the CLI's own file tool, in the right working directory; every turn records its
usage (cache reads and writes as the wire carries them) and cost; a refused report is
repaired in the same session; a tool call the CLI refuses does not end the turn."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flamechase.agents.usage import TokenCounts, price_for
from tests.realcli.clis import BIN, CLIS, OPENCODE_COST, SPECS, require
from tests.realcli.conftest import Flamechase
from tests.realcli.helpers import times, tokens_of, transcript, turns
from tests.realcli.script import Usage, WriteFile, refused_then_write, repair_once
from tests.realcli.server import ModelServer

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(300)]

# Which dialects carry cache writes: Gemini's and Chat Completions' usage have no such field,
# so a cache write reaches those CLIs as ordinary input.
CARRIES_CACHE_WRITE = {"claude": True, "codex": True, "gemini": False, "opencode": False}


# How each CLI names its working directory to the model (escaped as in the JSON body).
WORKDIR_MARK = {
    "claude": "Primary working directory: {ws}",
    "codex": "<cwd>{ws}</cwd>",
    "opencode": "Working directory: {ws}",
}


def expected_tokens(cli: str, sent: Usage, answers: int) -> Usage:
    per = (
        sent
        if CARRIES_CACHE_WRITE[cli]
        else Usage(sent.input + sent.cache_write, sent.output, sent.cache_read, 0)
    )
    return times(per, answers)


def expected_cost(cli: str, tokens: Usage) -> float:
    counts = TokenCounts(tokens.input, tokens.output, tokens.cache_read, tokens.cache_write)
    if cli == "claude":  # claude's own total_cost_usd: Sonnet 4.5 list prices
        return (
            counts.input * 3
            + counts.output * 15
            + counts.cache_read * 0.3
            + counts.cache_write * 3.75
        ) / 1e6
    if cli == "opencode":  # opencode's own cost, from the model's cost in its config
        c = OPENCODE_COST
        return (
            counts.input * c["input"]
            + counts.output * c["output"]
            + counts.cache_read * c["cache_read"]
            + counts.cache_write * c["cache_write"]
        ) / 1e6
    price = price_for(SPECS[cli].split("/", 1)[1])  # codex, gemini: tokens × our table
    assert price is not None
    return price.cost(counts)


def chase(flamechase: Flamechase, cli: str, turns_budget: int) -> None:
    spec = SPECS[cli]
    done = flamechase(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"first_chaser={spec}",
        "-a",
        f"second_chaser={spec}",
        "-p",
        f"budget.turns={turns_budget},rest_seconds=0.05",
        "add a line",
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("cli", CLIS)
def test_lane_one_writes_reports_with_the_file_tool_and_records_usage_per_turn(
    cli: str, flamechase: Flamechase, server: ModelServer, workspace: Path, state_home: Path
) -> None:
    require(cli)
    chase(flamechase, cli, 2)
    rows = turns(state_home)
    assert [r["status"] for r in rows] == ["valid", "valid"], [r["error"] for r in rows]
    main = server.exchanges(main=True)
    # Each turn: one answer writing the report with the file tool, one final message.
    assert len(main) == 4
    assert [type(e.step) for e in main].count(WriteFile) == 2
    # The CLI worked in the turn's workspace, and says so to the model; never in the
    # directory flamechase was started from (opencode takes it from $PWD).
    for e in main:
        assert e.conversation is not None
        said = e.conversation.raw.replace(str(BIN.parent), "")  # where the CLI is installed
        assert os.getcwd() == "/" or os.getcwd() not in said
        mark = WORKDIR_MARK.get(cli)
        assert mark is None or mark.format(ws=workspace) in e.conversation.raw
    for row in rows:
        tokens = tokens_of(row)
        want = expected_tokens(cli, server.usage, 2)
        assert tokens == want
        assert row["cost_usd"] == pytest.approx(expected_cost(cli, want), rel=1e-3)
        transcript_file = Path(row["io_dir"]) / "transcript.jsonl.gz"
        assert transcript(transcript_file), f"empty transcript {transcript_file}"


@pytest.mark.parametrize("cli", CLIS)
def test_a_refused_report_is_repaired_in_the_same_session(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require(cli)
    server.script.plan("", repair_once)
    chase(flamechase, cli, 1)
    [row] = turns(state_home)
    assert row["status"] == "valid", row["error"]
    [valid] = flamechase.events("turn_valid")
    assert valid["payload"]["repairs"] == 1
    # The repair request came in the same conversation: the first prompt is still there.
    writes = [e for e in server.exchanges(main=True) if isinstance(e.step, WriteFile)]
    assert [len(e.conversation.prompts) > 1 for e in writes if e.conversation] == [False, True]
    assert writes[1].conversation is not None
    *earlier, repair = writes[1].conversation.prompts
    assert any("You are first_chaser, taking turn 1" in p for p in earlier)
    assert "You are first_chaser, taking turn 1" not in repair


@pytest.mark.parametrize("cli", CLIS)
def test_a_tool_call_the_cli_refuses_is_answered_and_the_turn_goes_on(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require(cli)
    server.script.plan("", refused_then_write)
    chase(flamechase, cli, 1)
    [row] = turns(state_home)
    assert row["status"] == "valid", row["error"]
    after_refusal = [
        e
        for e in server.exchanges(main=True)
        if e.conversation is not None and len(e.conversation.tool_results) == 1
    ]
    assert after_refusal, "the CLI never answered the refused tool call"
    assert after_refusal[0].conversation is not None
    refusal = after_refusal[0].conversation.tool_results[0].lower()
    assert (
        "launch_rockets" in refusal
        or "not found" in refusal
        or "unknown" in refusal
        or "unavailable" in refusal
        or "invalid" in refusal
    ), refusal


@pytest.mark.parametrize("is_sandbox", ["0", "1"])
def test_claude_as_root_runs_whatever_is_sandbox_says(
    is_sandbox: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require("claude")
    if os.geteuid() != 0:
        pytest.skip("claude refuses bypassPermissions only as root")
    # claude takes --dangerously-skip-permissions as root only with IS_SANDBOX=1 exactly.
    flamechase.env["IS_SANDBOX"] = is_sandbox
    chase(flamechase, "claude", 1)
    [row] = turns(state_home)
    assert row["status"] == "valid", row["error"]
