"""parallel_flame_chase turn results and reports between lanes: repair, bad reports,
publication of failures, at-least-once delivery with acknowledgement, caps, stubs, checkpoints.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tests.flows.pfc import Team, check_delivery, of_kind, run_dir, turn_events
from tests.helpers import events, status


@pytest.fixture
def ws(source_tree: Path) -> Path:
    return source_tree


def _ids(entry: dict[str, Any], lane: str) -> list[str]:
    return [d["id"] for d in entry["inbox"] if d["lane"] == lane]


def _turn(team: Team, lane: str, turn: int) -> dict[str, Any]:
    return next(e for e in team.lane_log(lane) if e["turn"] == turn)


def test_a_valid_report_reaches_the_other_lanes_with_its_header(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.lane == "lane-1" and c.turn == 1:
            c.wait(lambda _: c.started("lane-2", 2) and c.started("lane-3", 2))
        if c.lane == "lane-2" and c.turn == 1:
            return c.ok("progress", "tried the cache idea", changes=["cache.py added"],
                        evidence=["p95 fell from 80 ms to 50 ms"], tests=["pytest -q: 12 passed"],
                        risks=["stale entries"], next_step="measure memory")
        if c.turn >= 2:
            return c.ok("blocked", "stop here")
    """,
    )
    assert team.run(ws).returncode == 3
    root = run_dir(state_home, ws)
    inbox = json.loads((root / "lanes/lane-1/turns/00002-1/inbox.json").read_text())
    from_2 = [d for d in inbox if d["lane"] == "lane-2"]
    assert [d["report"]["turn"] for d in from_2][:1] == [1]
    rec = from_2[0]["report"]
    assert from_2[0]["report_id"] == rec["report_id"]
    st = status(ws)
    assert {
        k: rec[k]
        for k in (
            "run_id",
            "lane",
            "role",
            "actor",
            "turn",
            "attempt",
            "recovered_from_checkpoint",
            "status",
            "summary",
            "changes",
            "evidence",
            "tests",
            "risks",
            "next_step",
            "deliverable",
            "submission",
            "artifacts",
        )
    } == {
        "run_id": st["id"],
        "lane": "lane-2",
        "role": "lane_2_actor_a",
        "actor": "a",
        "turn": 1,
        "attempt": 1,
        "recovered_from_checkpoint": False,
        "status": "progress",
        "summary": "tried the cache idea",
        "changes": ["cache.py added"],
        "evidence": ["p95 fell from 80 ms to 50 ms"],
        "tests": ["pytest -q: 12 passed"],
        "risks": ["stale entries"],
        "next_step": "measure memory",
        "deliverable": None,
        "submission": None,
        "artifacts": [],
    }
    assert rec["at"].endswith("Z")
    published = [
        e["payload"]["report_id"]
        for e in of_kind(events(ws), "report_published")
        if e["lane"] == "lane-2"
    ]
    assert rec["report_id"] == published[0]
    # The prompt shows the same reports as the file.
    # A recorded turn's prompt is kept gzipped (engine/turnfiles.py), once the run records it.
    path = Path(_turn(team, "lane-1", 2)["prompt"])
    gz = path.with_name(path.name + ".gz")
    prompt = gzip.decompress(gz.read_bytes()).decode() if gz.exists() else path.read_text()
    assert "tried the cache idea" in prompt and "$FLAMECHASE_INBOX" not in prompt
    assert str(root / "lanes/lane-1/turns/00002-1/inbox.json") in prompt
    check_delivery(team, ws)


def test_failures_are_published_and_a_failed_turn_leaves_its_batch_to_the_partner(
    ws: Path, tmp_path: Path
) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.lane == "lane-1":
            if c.turn == 1:
                c.wait(lambda _: c.started("lane-2", 2) and c.started("lane-3", 2))
            if c.turn == 2:
                sys.exit(1)
            if c.turn == 4:
                return c.ok("blocked", "stop here")
            return None
        if c.lane == "lane-2" and c.turn == 1:
            print("lane 2 fell over", file=sys.stderr)
            sys.exit(1)
        if c.turn >= 3:
            return c.ok("blocked", "stop here")
    """,
    )
    assert team.run(ws).returncode == 3
    t2, t3, t4 = (_turn(team, "lane-1", n) for n in (2, 3, 4))
    assert (t2["role"], t3["role"]) == ("lane_1_actor_b", "lane_1_actor_a")
    # lane-2's failed turn was published like a report.
    failed = [d for d in t2["inbox"] if d["lane"] == "lane-2"]
    assert failed and failed[0]["status"] == "turn_failed"
    assert any(d["lane"] == "lane-3" for d in t2["inbox"])
    # The failed turn acknowledged nothing: its partner gets the same batch again.
    assert {d["id"] for d in t2["inbox"]} <= {d["id"] for d in t3["inbox"]}
    # A valid turn acknowledged it: never again.
    assert not {d["id"] for d in t3["inbox"]} & {d["id"] for d in t4["inbox"]}
    check_delivery(team, ws)


def test_exec_reports_are_repaired_by_rerunning_the_script(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.turn >= 2:
            return c.ok("blocked", "stop here")
        if c.lane == "lane-1":
            sys.exit(2)  # a crash is not repaired
        if c.repair:
            c.save("repair-prompt.txt", c.prompt)
        if c.lane == "lane-2" and c.repair:
            return c.ok("progress", "fixed on repair")
        return {"status": "progress"}
    """,
    )
    assert team.run(ws).returncode == 3
    evs = events(ws)
    one = team.lane_log("lane-1", repairs=True)
    assert [e["turn"] for e in one] == [1, 2]
    two = [e for e in team.lane_log("lane-2", repairs=True) if e["turn"] == 1]
    assert [(e["attempt"], bool(e["repair"])) for e in two] == [(1, False), (1, True)]
    assert "summary" in two[1]["repair"]
    repair_prompt = run_dir(state_home, ws) / "lanes/lane-2/pfc/repair-prompt.txt"
    assert "rejected" in repair_prompt.read_text()
    valid = turn_events(evs, "lane-2")[0]
    assert valid["kind"] == "turn_valid" and valid["payload"]["repairs"] == 1
    assert valid["payload"]["summary"] == "fixed on repair"
    three = [e for e in team.lane_log("lane-3", repairs=True) if e["turn"] == 1]
    assert [bool(e["repair"]) for e in three] == [False, True, True]
    failed = turn_events(evs, "lane-3")[0]
    assert failed["kind"] == "turn_failed" and failed["payload"]["repairs"] == 2
    assert "summary" in failed["payload"]["error"] and "\n" not in failed["payload"]["error"]
    crash = turn_events(evs, "lane-1")[0]
    assert crash["kind"] == "turn_failed" and crash["payload"]["repairs"] == 0


BAD_REPORTS = {
    "deliverable with status progress": (
        'r = c.deliver({"a.txt": "x"})\nr["status"] = "progress"\nreturn r',
        "only status deliverable_ready may carry a deliverable",
    ),
    "deliverable_ready without deliverable": (
        'return c.ok("deliverable_ready")',
        "requires a deliverable",
    ),
    "submission without deliverable": (
        'return c.ok(submission={"title": "t", "metric": "score", "value": 1, '
        '"direction": "minimize", "evaluator": "e"})',
        "submission requires a deliverable",
    ),
    "infinite value": (
        'return c.deliver({"a.txt": "x"}, submission={"title": "t", "metric": "score", '
        '"value": float("inf"), "direction": "minimize", "evaluator": "e"})',
        "finite",
    ),
    "NaN value": (
        'return c.deliver({"a.txt": "x"}, submission={"title": "t", "metric": "score", '
        '"value": float("nan"), "direction": "minimize", "evaluator": "e"})',
        "finite",
    ),
    "boolean value": (
        'return c.deliver({"a.txt": "x"}, submission={"title": "t", "metric": "score", '
        '"value": True, "direction": "minimize", "evaluator": "e"})',
        "number",
    ),
    "blank metric": (
        'return c.deliver({"a.txt": "x"}, submission={"title": "t", "metric": "  ", '
        '"value": 1, "direction": "minimize", "evaluator": "e"})',
        "blank",
    ),
    "blank title": (
        'return c.deliver({"a.txt": "x"}, submission={"title": "", "metric": "score", '
        '"value": 1, "direction": "minimize", "evaluator": "e"})',
        "title",
    ),
    "blank evaluator": (
        'return c.deliver({"a.txt": "x"}, submission={"title": "t", "metric": "score", '
        '"value": 1, "direction": "minimize", "evaluator": " "})',
        "blank",
    ),
    "unknown status": ('return c.ok("done")', "status"),
    "extra key": ('return c.ok(mood="happy")', "mood"),
    "long list item": ('return c.ok(evidence=["x" * 2001])', "2000"),
    "not an object": ("return [1, 2]", "JSON object"),
    "not JSON": ('return "{not json"', "not JSON"),
}


def test_bad_reports_fail_the_one_turn_with_a_one_line_reason(ws: Path, tmp_path: Path) -> None:
    cases = sorted(BAD_REPORTS)
    lanes = 5
    # Lane k takes cases k, k+5, k+10 on turns 1, 3, 5; valid turns in between keep it unheld.
    body = "cases = " + repr(cases) + "\n"
    body += (
        f"i = int(c.lane.split('-')[1]) - 1 + {lanes} * (c.turn // 2)\n"
        "if c.turn >= 6 or i >= len(cases):\n    return c.ok('blocked', 'stop here')\n"
        "if c.turn % 2 == 0:\n    return None\n"
    )
    for n, case in enumerate(cases):
        body += f"if i == {n}:\n" + "".join(
            f"    {line}\n" for line in BAD_REPORTS[case][0].splitlines()
        )
    team = Team(tmp_path / "team", body)
    assert team.run(ws, f"lanes={lanes}").returncode == 3
    evs = events(ws)
    for n, case in enumerate(cases):
        lane, turn = f"lane-{n % lanes + 1}", 2 * (n // lanes) + 1
        ev = next(e for e in turn_events(evs, lane) if e["payload"]["turn"] == turn)
        assert ev["kind"] == "turn_failed", case
        error = ev["payload"]["error"]
        assert BAD_REPORTS[case][1] in error, (case, error)
        assert "\n" not in error
        assert ev["payload"]["repairs"] == 2
    for n in range(1, lanes + 1):
        kinds = [e["kind"] for e in turn_events(evs, f"lane-{n}")]
        assert set(kinds[::2]) == {"turn_failed"} and set(kinds[1::2]) == {"turn_valid"}, n
    assert all(not ln["held"] or ln["last_status"] == "blocked" for ln in status(ws)["lanes"])


def test_delivery_is_capped_at_12_records_per_source_per_turn(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.lane == "lane-1":
            if c.turn == 1:
                c.wait(lambda _: c.started("lane-2", 14), timeout=90)
            if c.turn == 3:
                c.save("release", "")
                # lane-2's 15th turn starts only once its 14th is recorded (and published):
                # so lane-1's 4th turn, which starts after this one, finds it in its inbox.
                c.wait(lambda _: c.started("lane-2", 15), timeout=60)
            if c.turn == 4:
                c.save("release-15", "")
                return c.ok("blocked", "stop here")
            return None
        if c.lane == "lane-2":
            if c.turn == 14:
                c.wait(lambda _: c.flag("release"), timeout=60)
            if c.turn == 15:
                c.wait(lambda _: c.flag("release-15"), timeout=60)
                return c.ok("blocked", "stop here")
            return None
        return c.ok("blocked", "stop here")
    """,
    )
    assert team.run(ws, "budget.duration=150s", timeout=180).returncode == 3
    published = [
        e["payload"]["report_id"]
        for e in of_kind(events(ws), "report_published")
        if e["lane"] == "lane-2"
    ]
    assert len(published) == 15
    assert _ids(_turn(team, "lane-1", 2), "lane-2") == published[:12]
    assert _ids(_turn(team, "lane-1", 3), "lane-2") == published[12:13]
    assert _ids(_turn(team, "lane-1", 4), "lane-2") == published[13:14]
    check_delivery(team, ws)


def test_delivery_is_capped_at_128_kib_and_an_oversized_report_comes_as_a_stub(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.lane == "lane-1":
            if c.turn == 1:
                c.wait(lambda _: c.started("lane-2", 6), timeout=60)
            if c.turn == 5:
                c.save("release", "")
            if c.turn == 6:
                return c.ok("blocked", "stop here")
            return None
        if c.lane == "lane-2":
            if c.turn <= 3:  # about 50 KB each: two fit in 128 KiB, three do not
                return c.ok(summary=f"medium {c.turn}", evidence=["e" * 2000] * 25)
            if c.turn == 4:  # about 208 KB: more than a whole delivery
                return c.ok(summary="s" * 8000, changes=["c" * 2000] * 50,
                            evidence=["e" * 2000] * 50)
            if c.turn == 5:
                return c.ok(summary="small again")
            c.wait(lambda _: c.flag("release"), timeout=60)
            return c.ok("blocked", "stop here")
        return c.ok("blocked", "stop here")
    """,
    )
    assert team.run(ws).returncode == 3
    evs = events(ws)
    assert [e["kind"] for e in turn_events(evs, "lane-2")] == ["turn_valid"] * 6
    published = [
        e["payload"]["report_id"] for e in of_kind(evs, "report_published") if e["lane"] == "lane-2"
    ]
    got = [_ids(_turn(team, "lane-1", n), "lane-2") for n in (2, 3, 4, 5)]
    assert got == [published[0:2], published[2:3], published[3:4], published[4:5]]
    stub = next(d for d in _turn(team, "lane-1", 4)["inbox"] if d["lane"] == "lane-2")
    assert stub["stub"] is True
    root = run_dir(state_home, ws)
    whole = json.loads((root / "lanes/lane-1/turns/00004-1/inbox.json").read_text())
    entry = next(d for d in whole if d["lane"] == "lane-2")
    assert entry["stub"] is True and entry["bytes"] > 128 * 1024
    assert entry["report"]["status"] == "progress"
    assert entry["report"]["summary"].startswith("sss")
    assert len(json.dumps(entry)) < 128 * 1024
    check_delivery(team, ws)


CHECKPOINTS = {
    # lane: (what the turn-1 actor leaves, recovered?)
    "lane-1": ("c.checkpoint(r)", True),
    "lane-2": ("c.checkpoint(r)\nsys.exit(1)", True),  # crashed after its checkpoint
    "lane-3": ("c.checkpoint(r, attempt=c.attempt + 1)", False),
    "lane-4": ("c.checkpoint(r, run_id='20200101T000000Z-0000000000')", False),
    "lane-5": ("c.checkpoint(r, lane='lane-1')", False),
    "lane-6": ("c.checkpoint(r, phase='working')", False),
    "lane-7": ("c.checkpoint(r, turn=str(c.turn))", False),
    "lane-8": ("c.checkpoint({'status': 'progress'})", False),  # no summary: invalid report
}


def test_checkpoint_recovery_needs_the_exact_identity_and_a_terminal_phase(
    ws: Path, tmp_path: Path
) -> None:
    body = (
        "if c.turn >= 2:\n    return c.ok('blocked', 'stop here')\n"
        # The other lanes end their first turn only once lanes 1 and 2 were recorded, so
        # their second turn surely receives what lanes 1 and 2 published.
        "if c.lane not in ('lane-1', 'lane-2'):\n"
        "    c.wait(lambda _: c.started('lane-1', 2) and c.started('lane-2', 2))\n"
        "r = c.ok('progress', 'from the checkpoint')\n"
    )
    for lane, (code, _) in CHECKPOINTS.items():
        body += f"if c.lane == {lane!r}:\n" + "".join(f"    {line}\n" for line in code.splitlines())
    body += "return c.SKIP\n"
    team = Team(tmp_path / "team", body)
    assert team.run(ws, "lanes=8").returncode == 3
    evs = events(ws)
    for lane, (_, recovered) in CHECKPOINTS.items():
        first = turn_events(evs, lane)[0]
        if recovered:
            assert first["kind"] == "turn_valid", lane
            assert first["payload"]["recovered_from_checkpoint"] is True
            assert first["payload"]["summary"] == "from the checkpoint"
        else:
            assert first["kind"] == "turn_failed", lane
            assert "no report" in first["payload"]["error"], lane
    # The recovered record is published with its flag.
    inbox = next(e for e in team.lane_log("lane-3") if e["turn"] == 2)["inbox"]
    assert {d["lane"] for d in inbox} >= {"lane-1", "lane-2"}


def test_a_checkpoint_of_an_earlier_turn_is_not_used(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.turn == 1:
            r = c.ok("progress", "turn one, checkpointed")
            c.checkpoint(r)
            return r
        if c.turn == 2 and c.lane == "lane-2":
            return c.SKIP
        return c.ok("blocked", "stop here")
    """,
    )
    assert team.run(ws).returncode == 3
    kinds = [e["kind"] for e in turn_events(events(ws), "lane-2")]
    assert kinds == ["turn_valid", "turn_failed", "turn_valid"]


def test_reports_and_checkpoints_are_never_read_through_a_link(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.turn >= 2:
            return c.ok("blocked", "stop here")
        good = c.ok("progress", "read through a link")
        if c.repair and c.lane != "lane-1":  # leave the checkpoint of the first run alone
            return c.SKIP
        if c.lane == "lane-1":  # the report file is a link to a valid report
            (c.scratch / "elsewhere.json").write_text(json.dumps(good))
            c.report_path.unlink(missing_ok=True)
            os.symlink(c.scratch / "elsewhere.json", c.report_path)
            return c.SKIP
        if c.lane == "lane-2":  # the checkpoint is a link to an exact terminal one
            c.checkpoint(good)
            os.rename(c.ckpt, c.scratch / "ckpt.json")
            os.symlink(c.scratch / "ckpt.json", c.ckpt)
        if c.lane == "lane-3":  # exact and terminal, but over 1 MiB
            c.checkpoint({**good, "next_step": "x" * 3000})
            text = c.ckpt.read_text()
            c.ckpt.write_text(text[:-1] + " " * (1024 * 1024) + "}")
        if c.lane == "lane-4":  # not UTF-8
            c.checkpoint({**good, "next_step": "caf\\u00e9"})
            c.ckpt.write_bytes(c.ckpt.read_bytes().replace(b"\\\\u00e9", b"\\xe9"))
        return c.SKIP
    """,
    )
    assert team.run(ws, "lanes=4").returncode == 3
    evs = events(ws)
    for n in (1, 2, 3, 4):
        first = turn_events(evs, f"lane-{n}")[0]
        assert first["kind"] == "turn_failed", n
        assert "read through a link" not in json.dumps(first["payload"])
        if n > 1:
            assert "no report" in first["payload"]["error"], n
    assert "symbolic link" in turn_events(evs, "lane-1")[0]["payload"]["error"]
