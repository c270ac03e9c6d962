"""docs/writing-a-flow.md's example flow, run end to end through `flamechase exec`."""

from __future__ import annotations

from pathlib import Path

from flamechase.flow import RunSetup, StartTurn, events
from flamechase.loader import load_flow
from tests.helpers import actor, cli, status
from tests.helpers import events as run_events

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "review_flow.py"

AUTHOR = """
    echo "draft $FLAMECHASE_TURN" >> DOC.md
    echo '{"status":"progress","summary":"drafted"}' > "$FLAMECHASE_REPORT"
"""
APPROVE = """echo '{"approve": true}' > "$FLAMECHASE_REPORT"\n"""
# Approves only the second draft; says why not before.
PICKY = """
    if grep -q "draft 2" DOC.md; then
      echo '{"approve": true}' > "$FLAMECHASE_REPORT"
    else
      echo '{"approve": false, "comments": ["say where the backups live"]}' > "$FLAMECHASE_REPORT"
    fi
"""


def _args(tmp_path: Path, *params: str) -> list[str]:
    args = ["exec", "-f", str(EXAMPLE)]
    for role in ("author", "reviewer_a", "reviewer_b"):
        args += ["-a", f"{role}=exec:{tmp_path / role}.sh"]
    return [
        *args,
        "-p",
        ",".join(["budget.turns=20", "rest_seconds=0.05", *params]),
        "Write DOC.md",
    ]


def _run(tmp_path: Path, reviewer_b: str, *params: str) -> tuple[int, Path, str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    actor(tmp_path, "author.sh", AUTHOR)
    actor(tmp_path, "reviewer_a.sh", APPROVE)
    actor(tmp_path, "reviewer_b.sh", reviewer_b)
    proc = cli(*_args(tmp_path, *params), cwd=ws, timeout=60)
    return proc.returncode, ws, proc.stderr


def test_the_example_runs_until_both_reviewers_approve(tmp_path: Path) -> None:
    code, ws, err = _run(tmp_path, PICKY)
    assert code == 0, err
    assert "both reviewers approved draft 2" in err
    assert (ws / "DOC.md").read_text() == "draft 1\ndraft 2\n"
    st = status(ws)
    assert st["flow"] == "review" and st["draft"] == 2
    assert st["flow_source"] == f"path:{EXAMPLE}"
    # The rejected draft's comments reached the author's second prompt.
    second = [e for e in run_events(ws) if e["kind"] == "turn_started" and e["actor"] == "author"][
        1
    ]
    assert second["payload"]["turn"] == 2


def test_the_example_gives_up_after_its_rounds(tmp_path: Path) -> None:
    never = """echo '{"approve": false, "comments": ["no"]}' > "$FLAMECHASE_REPORT"\n"""
    code, _ws, err = _run(tmp_path, never, "rounds=2")
    assert code == 1, err
    assert "not approved after 2 drafts" in err


def test_a_bad_verdict_is_repaired_in_the_same_turn(tmp_path: Path) -> None:
    sloppy = """
        if [ -n "$FLAMECHASE_REPAIR" ]; then
          echo '{"approve": true}' > "$FLAMECHASE_REPORT"
        else
          echo '{"approve": "maybe"}' > "$FLAMECHASE_REPORT"
        fi
    """
    code, ws, err = _run(tmp_path, sloppy)
    assert code == 0, err
    valid = [e for e in run_events(ws) if e["kind"] == "turn_valid" and e["actor"] == "reviewer_b"]
    assert len(valid) == 1 and valid[0]["payload"]["repairs"] == 1


def test_the_example_decider_alone() -> None:
    flow = load_flow(str(EXAMPLE))
    state = flow.start(RunSetup(run_id="r", objective="o", params=flow.Params(), lanes=[]))
    [first] = flow.decide(state, 0.0)
    assert isinstance(first, StartTurn) and first.role == "author"
    state = flow.evolve(state, events.TurnValid(actor="author", turn=1, result={}))
    assert [c.role for c in flow.decide(state, 0.0) if isinstance(c, StartTurn)] == [
        "reviewer_a",
        "reviewer_b",
    ]
    state = flow.evolve(
        state,
        events.TurnValid(actor="reviewer_a", turn=1, result={"approve": False, "comments": ["x"]}),
    )
    state = flow.evolve(
        state,
        events.TurnValid(actor="reviewer_b", turn=1, result={"approve": True, "comments": []}),
    )
    [again] = flow.decide(state, 0.0)
    assert isinstance(again, StartTurn) and (again.role, again.number) == ("author", 2)


def test_the_guide_shows_the_example_whole() -> None:
    guide = (ROOT / "docs" / "writing-a-flow.md").read_text()
    assert EXAMPLE.read_text() in guide
    assert len(EXAMPLE.read_text().splitlines()) < 150


def test_the_same_command_again_says_the_run_finished_and_fresh_starts_anew(
    tmp_path: Path,
) -> None:
    # What the guide's "Running the same command again" and the README say.
    code, ws, _ = _run(tmp_path, APPROVE)
    assert code == 0
    first = status(ws)
    again = cli(*_args(tmp_path), cwd=ws, timeout=60)
    assert again.returncode == 2, again.stderr
    line = again.stderr.strip()
    assert len(line.splitlines()) == 1
    assert f"run {first['id']} on this task already finished" in line
    assert "both reviewers approved draft 1" in line and "-p resume_mode=fresh" in line
    assert status(ws)["budget"]["turns"]["used"] == 3  # no turn was taken again
    fresh = cli(*_args(tmp_path, "resume_mode=fresh"), cwd=ws, timeout=60)
    assert fresh.returncode == 0, fresh.stderr
    assert status(ws)["id"] != first["id"]
    guide = (ROOT / "docs" / "writing-a-flow.md").read_text()
    section = guide.split("## Running the same command again", 1)[1]
    for said in ("is picked up only when", "-p resume_mode=fresh", "--resume", "--refresh"):
        assert said in section
    assert "is picked up only when" in (ROOT / "README.md").read_text()
