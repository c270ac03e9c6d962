"""What the model service's errors come to, through each real CLI and flamechase: a rate
limit and an overload are retried and the turn still lands; a usage limit (in the vendor's
own words) pauses the lane until its reset; a stream cut in the middle fails the turn with
the reason; a CLI cut before it printed anything still leaves a transcript."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.realcli.clis import CLIS, SPECS, require
from tests.realcli.conftest import Flamechase
from tests.realcli.helpers import transcript, turns
from tests.realcli.script import Fault
from tests.realcli.server import ModelServer

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(300)]


def chase(
    flamechase: Flamechase, cli: str, params: str = "budget.turns=1", *, code: int = 0
) -> None:
    """One flame_chase run; `code` 1 when its only turn is meant to fail (a run none of
    whose turns was valid ends failed)."""
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
        f"{params},rest_seconds=0.05",
        "add a line",
    )
    assert done.returncode == code, done.stderr[-3000:]
    if code:
        assert "none of its 1 turn was valid" in done.stderr, done.stderr[-3000:]


@pytest.mark.parametrize("cli", CLIS)
def test_a_rate_limit_and_an_overload_are_retried_and_the_turn_lands(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require(cli)
    server.script.fault("You are first_chaser", Fault("rate_limit", retry_after=0))
    server.script.fault("You are first_chaser", Fault("overloaded"))
    chase(flamechase, cli)
    [row] = turns(state_home)
    assert row["status"] == "valid", row["error"]
    assert server.script.faults_left() == 0
    answered = [e.status for e in server.exchanges(main=True)]
    assert answered[0] == 429 and answered[1] in (503, 529) and 200 in answered[2:]


@pytest.mark.parametrize("cli", CLIS)
def test_a_usage_limit_pauses_the_lane_until_the_reset(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require(cli)
    reset = int(time.time()) + 2 * 3600 + 600
    server.script.fault("You are first_chaser", Fault("usage_limit", reset_epoch=reset), 8)
    chase(flamechase, cli, "budget.turns=1,budget.duration=10s")
    [lane] = flamechase.status()["lanes"]
    assert lane["paused_until"], lane
    paused = datetime.fromisoformat(lane["paused_until"].replace("Z", "+00:00"))
    if cli == "gemini":  # a daily quota: midnight Pacific
        assert paused.astimezone(_pacific()).time().isoformat() == "00:00:00"
    else:
        assert abs(paused - datetime.fromtimestamp(reset, UTC)) < timedelta(minutes=2)
    assert lane["consecutive_failures"] == 0
    assert [r["status"] for r in turns(state_home)] in ([], ["limited"])


def _pacific():  # type: ignore[no-untyped-def]
    from zoneinfo import ZoneInfo

    return ZoneInfo("America/Los_Angeles")


# What each CLI says when the stream is cut and it gives up (its own retries are off, but
# opencode has no setting for them: it retries five times, 2 s to 30 s apart).
CUT_REASON = {
    "claude": "Connection to the API was lost",
    "codex": "stream disconnected",
    "gemini": "terminated",
}


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_a_stream_cut_in_the_middle_fails_the_turn_with_the_reason(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require(cli)
    server.script.fault("You are first_chaser", Fault("cut"), 10)
    chase(flamechase, cli, code=1)
    [row] = turns(state_home)
    assert row["status"] == "failed"
    assert row["error"].startswith(f"{cli}: ") and CUT_REASON[cli] in row["error"], row["error"]


def test_opencode_retries_a_cut_stream_itself_and_the_turn_lands(
    flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require("opencode")
    server.script.fault("You are first_chaser", Fault("cut"))
    chase(flamechase, "opencode")
    [row] = turns(state_home)
    assert row["status"] == "valid", row["error"]
    assert server.script.faults_left() == 0


@pytest.mark.parametrize("cli", CLIS)
def test_a_cli_cut_before_it_printed_anything_leaves_a_transcript(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require(cli)
    server.script.fault("You are first_chaser", Fault("hang"), 5)
    chase(flamechase, cli, "budget.turns=1,silence_timeout=4,kill_grace=1", code=1)
    [row] = turns(state_home)
    assert row["status"] == "failed" and "said nothing" in row["error"], row
    lines = transcript(Path(row["io_dir"]) / "transcript.jsonl.gz")
    assert lines[0]["flamechase"] == "started" and lines[-1]["flamechase"] == "ended"
    assert lines[-1]["why"].startswith(f"{cli} said nothing")
