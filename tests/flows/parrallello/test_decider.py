"""parrallello's decider alone: events in, commands out. The runtime (a stand-in answering each
command) applies the approval rule, the round and block ceilings, pacing, refusals."""

from __future__ import annotations

from flamechase import events as ev
from flamechase.flow import MakePlace, Run, StartTurn
from flamechase.flows.parrallello import FLOW
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello.sheets import SheetsTaken
from tests.flows.parrallello.decider import Driver, Script, diff, front, plan


def kinds(d: Driver, kind: type[ev.Event]) -> list[ev.Event]:
    return d.of(kind)


def test_a_front_is_approved_when_the_gate_passes_and_the_critic_finds_nothing() -> None:
    d = Driver(plan(front())).run()
    verdicts = d.of(fev.VerdictRecorded)
    assert [(v.round, v.approved) for v in verdicts] == [(1, False), (2, True)]
    assert [f.status for f in d.of(fev.FrontEnded)] == ["approved"]
    assert d.of(fev.FrontIntegrated)[0].commit == "c1"
    assert d.finished is not None and d.finished.status == "finished"


def test_a_critic_approving_while_a_gate_fails_is_not_approved_and_is_flagged() -> None:
    d = Driver(
        plan(front(), blocks=1, rounds_per_block=1), Script(gate=lambda f, r: {"T.a": False})
    ).run()
    (v,) = d.of(fev.VerdictRecorded)
    assert not v.approved and v.critic_approve is True and "a gate does not PASS" in v.reasons
    assert [a.what for a in d.of(fev.Anomaly)] == ["critic-rule-mismatch"]
    assert d.finished is not None and d.finished.status == "failed"


def test_a_medium_finding_rejects_whatever_the_critic_says() -> None:
    verdict = {
        "findings": [{"id": "x", "severity": "medium", "title": "no test"}],
        "approve": True,
        "summary": "s",
        "tickets": [{"id": "C-1", "severity": "medium", "title": "add a test"}],
    }
    d = Driver(
        plan(front(), blocks=1, rounds_per_block=2),
        Script(gate=lambda f, r: {"T.a": True}, verdict=lambda f, r: verdict),
    ).run()
    assert [v.approved for v in d.of(fev.VerdictRecorded)] == [False, False]
    second = d.of(fev.RoundStarted)[1]
    assert second.builders == {"core": ["C-1"]}  # the critic's ticket goes to the builder


def test_the_round_ceiling_ends_a_block_and_the_block_ceiling_ends_the_front() -> None:
    d = Driver(
        plan(front(), blocks=2, rounds_per_block=2),
        Script(gate=lambda f, r: {"T.a": False, "T.b": True}),
    ).run()
    assert [r.round for r in d.of(fev.RoundStarted)] == [1, 2, 3, 4]
    assert [(b.block, b.rounds) for b in d.of(fev.BlockEnded)] == [(1, 2), (2, 2)]
    (end,) = d.of(fev.FrontEnded)
    assert end.status == "not_approved" and "ceiling reached" in end.reason
    assert [t["id"] for t in end.open_tickets] == ["G-T.a"]
    builders = [
        c for cs in d.commands for c in cs if isinstance(c, StartTurn) and c.role == "builder"
    ]
    assert {c.number for c in builders} == {1, 2, 3, 4}  # no fifth round was ever asked for
    assert not d.of(fev.FrontIntegrated)  # nothing unapproved lands in the source


def test_a_block_over_its_share_of_the_budget_paces_the_next_one() -> None:
    tickets = [{"id": f"t{i}", "severity": "major", "title": "x"} for i in range(6)]
    verdict = {
        "findings": [{"id": "f", "severity": "major", "title": "x"}],
        "approve": False,
        "summary": "s",
        "tickets": tickets,
    }
    d = Driver(
        plan(
            front(owners={"a": ["src/a/**"], "b": ["src/b/**"]}, tickets=tickets),
            blocks=2,
            rounds_per_block=1,
        ),
        Script(gate=lambda f, r: {"T.a": False}, cost=0.2, verdict=lambda f, r: verdict),
        budget={"cost": 5.0},
        pacing_share=0.05,
        paced_tickets=2,
    ).run()
    first, last = d.of(fev.BlockEnded)
    assert first.spend["cost"] > 0 and first.share > 0.05 and first.paced_next
    # The last block has no next block to pace, whatever it spent.
    assert last.share > 0.05 and not last.paced_next
    rounds = d.of(fev.RoundStarted)
    assert not rounds[0].paced and sum(len(t) for t in rounds[0].builders.values()) == 6
    assert rounds[1].paced and rounds[1].ceiling == 40
    assert sum(len(t) for t in rounds[1].builders.values()) == 2


def test_no_new_block_starts_above_the_stop_share() -> None:
    d = Driver(
        plan(front(), blocks=3, rounds_per_block=1),
        Script(gate=lambda f, r: {"T.a": False}, cost=1.0),
        budget={"cost": 4.0},
    ).run()
    (end,) = d.of(fev.FrontEnded)
    assert end.status == "stopped" and "no new block" in end.reason
    assert len(d.of(fev.RoundStarted)) < 3


def test_a_builder_writing_outside_its_files_is_reverted_and_its_tickets_fail() -> None:
    d = Driver(
        plan(
            front(tickets=[{"id": "T1", "severity": "major", "title": "x"}]),
            blocks=1,
            rounds_per_block=1,
        ),
        Script(
            gate=lambda f, r: {"T.a": True},
            builder_diff=lambda f, r, o: diff(["src/P1/a.py"], ["README.md"]),
        ),
    ).run()
    (checked,) = d.of(fev.BuilderChecked)
    assert checked.outside == ["README.md"] and checked.failed_tickets == ["T1"]
    (v,) = d.of(fev.VerdictRecorded)
    assert not v.approved and v.majors == 1
    assert "ownership-violation" in [a.what for a in d.of(fev.Anomaly)]


def test_a_builder_editing_a_gate_refuses_the_rounds_work() -> None:
    d = Driver(
        plan(front(), blocks=1, rounds_per_block=1),
        Script(builder_diff=lambda f, r, o: diff(["src/P1/a.py"], [], ["gates/P1.py"])),
    ).run()
    runs = [c.key for cs in d.commands for c in cs if isinstance(c, Run)]
    assert not any(":apply:" in k or ":gate:1:" in k for k in runs)  # nothing taken, not gated
    assert not any(isinstance(c, StartTurn) and c.role == "critic" for cs in d.commands for c in cs)
    (v,) = d.of(fev.VerdictRecorded)
    assert not v.approved and any("edited the frozen gate" in r for r in v.reasons)


def test_a_gate_file_changed_in_the_fronts_tree_refuses_the_round() -> None:
    moved = Script(hashes=lambda f, r: {"gates/P1.py": "h1" if r == 0 else "MOVED"})
    d = Driver(plan(front(), blocks=1, rounds_per_block=1), moved).run()
    (v,) = d.of(fev.VerdictRecorded)
    assert not v.approved and "changed in the front's tree" in " ".join(v.reasons)


def test_a_critic_adding_gate_items_refreezes_and_runs_the_gate_again() -> None:
    verdict = {
        "findings": [],
        "approve": True,
        "summary": "s",
        "gate_changes": [
            {"kind": "add_items", "items": ["T.new"], "reason": "probed the real thing"}
        ],
    }
    d = Driver(
        plan(front(), blocks=1, rounds_per_block=1),
        Script(
            gate=lambda f, r: {"T.a": True, "T.new": True},
            verdict=lambda f, r: verdict,
            critic_diff=lambda f, r: diff(["gates/P1.py"]),
        ),
    ).run()
    # Nothing to fix after a green baseline: the round is the critic's alone, on the
    # baseline's result; its added item makes the runtime run the gate again.
    assert [g.stage for g in d.of(fev.GateRan)] == ["baseline", "recheck"]
    assert d.of(fev.RoundStarted)[0].builders == {}
    assert d.of(fev.GateRefrozen)[0].files == ["gates/P1.py"]
    assert d.of(fev.VerdictRecorded)[0].approved


def test_a_critic_editing_the_gate_without_saying_so_is_not_taken() -> None:
    d = Driver(
        plan(front(), blocks=1, rounds_per_block=1),
        Script(
            gate=lambda f, r: {"T.a": True},
            critic_diff=lambda f, r: diff(["gates/P1.py"], ["src/P1/a.py"]),
        ),
    ).run()
    assert {"undeclared-gate-edit", "critic-edited-front"} <= {a.what for a in d.of(fev.Anomaly)}
    assert not any(":capply:" in c.key for cs in d.commands for c in cs if isinstance(c, Run))


def test_a_dead_builder_is_relaunched_once_in_the_same_round() -> None:
    d = Driver(
        plan(front(), blocks=1, rounds_per_block=1), Script(fail_turn=lambda c: c.role == "builder")
    ).run()
    builder = [
        c for cs in d.commands for c in cs if isinstance(c, StartTurn) and c.role == "builder"
    ]
    assert [c.number for c in builder] == [1, 1]
    assert "agent-dead" in [a.what for a in d.of(fev.Anomaly)]


def test_fronts_of_a_wave_open_together_and_a_dependent_waits_for_approval() -> None:
    d = Driver(plan(front("P1"), front("P2"), front("P3", wave=2, depends_on=["P1"])))
    d.step()
    d.step()
    made = [c.name for cs in d.commands for c in cs if isinstance(c, MakePlace)]
    assert {"fronts/P1", "fronts/P2"} <= set(made) and "fronts/P3" not in made
    d.run()
    order = [e.front for e in d.of(fev.FrontStarted)]
    assert order.index("P3") == 2
    p1_end = next(
        i for i, e in enumerate(d.events) if isinstance(e, fev.FrontIntegrated) and e.front == "P1"
    )
    p3_start = next(
        i for i, e in enumerate(d.events) if isinstance(e, fev.FrontStarted) and e.front == "P3"
    )
    assert p1_end < p3_start


def test_a_front_whose_dependency_is_not_approved_is_blocked() -> None:
    d = Driver(
        plan(front("P1"), front("P2", wave=2, depends_on=["P1"]), blocks=1, rounds_per_block=1),
        Script(gate=lambda f, r: {"T.a": False}),
    ).run()
    ends = {e.front: e.status for e in d.of(fev.FrontEnded)}
    assert ends == {"P1": "not_approved", "P2": "blocked"}
    assert "fronts/P2" not in [c.name for cs in d.commands for c in cs if isinstance(c, MakePlace)]


def test_a_stored_state_resumes_at_the_same_front_block_round_and_phase() -> None:
    d = Driver(
        plan(front(), blocks=2, rounds_per_block=2), Script(gate=lambda f, r: {"T.a": False})
    )
    for _ in range(40):
        d.step()
        rs = d.state.fronts["P1"].current
        if rs is not None and rs.number == 3 and rs.phase == "build":
            break
    stored = FLOW.load_state(d.state.model_dump_json())
    assert stored == d.state
    again = [c for c in FLOW.decide(stored, 0.0) if isinstance(c, StartTurn)]
    assert [(c.role, c.lane, c.number) for c in again] == [("builder", "P1.core", 3)]
    assert stored.fronts["P1"].block == 2 and stored.fronts["P1"].current.in_block == 1


def test_describe_shows_a_bar_per_front_and_overall() -> None:
    d = Driver(
        plan(front("P1", weight=3), front("P2"), blocks=1, rounds_per_block=2),
        Script(gate=lambda f, r: {"T.a": f == "P1" and r >= 2}),
    ).run()
    summary = FLOW.describe(d.state)
    assert summary["fronts"]["P1"]["progress"] == 1.0
    assert summary["fronts"]["P2"]["status"] == "not_approved"
    # The weighted mean is 99.75 %; a run with a front not approved never reads 100 %.
    assert summary["progress"]["overall"] == 0.99
    # Every front has ended: the run is said as its count, not as a near-done bar; the front
    # not approved as where it stopped.
    assert summary["display"][0] == "overall: 1 of 2 fronts approved"
    p2 = next(x for x in summary["display"] if x.startswith("P2 "))
    assert "NOT APPROVED" in p2 and "it stopped at round 2 (block 1 of 1)" in p2 and "%" not in p2
    assert summary["fronts"]["P2"]["stopped"]["tree"] == d.state.places["fronts/P2"]
    assert summary["lanes"]["P1.core"] == {"front": "P1", "owner": "core", "files": ["src/P1/**"]}


def test_prep_stages_future_fronts_that_collide_with_nothing_in_flight() -> None:
    d = Driver(
        plan(
            front("P1", owners={"a": ["src/a/**"]}),
            front("P2", owners={"b": ["src/b/**"]}, wave=2),
            front("P3", owners={"c": ["src/a/x.py"]}, wave=2),
            rounds_per_block=2,
        ),
        prep=True,
    )
    for _ in range(8):
        d.step()
    stages = [
        c.name
        for cs in d.commands
        for c in cs
        if isinstance(c, MakePlace) and c.name.startswith("stages/")
    ]
    assert {"stages/P1", "stages/P2"} <= set(stages)  # P0 for wave 1, and a warm P2
    assert "stages/P3" not in stages  # P3 shares src/a/x.py with P1, which is in flight
    d.run()
    order = [
        (type(e).__name__, getattr(e, "front", ""))
        for e in d.events
        if isinstance(e, fev.FrontPrepped | fev.FrontEnded)
    ]
    assert order.index(("FrontPrepped", "P3")) > order.index(("FrontEnded", "P1"))
    assert all(e.status == "approved" for e in d.of(fev.FrontEnded))


def test_a_performance_gate_runs_under_the_lock_and_only_selects_items() -> None:
    from flamechase.flows.parrallello import runtime as rt
    from flamechase.flows.parrallello.plan import PlanSpec

    spec = PlanSpec.model_validate(plan(front(only="T.P1.*", exclusive=True))).fronts[0]
    gate = rt.gate_full("k", spec, "P1", {"gates/P1.py": "0" * 64})
    assert gate.exclusive  # the runtime takes the lock for it, ahead of the builders
    assert gate.frozen == {"gates/P1.py": "0" * 64}  # a yardstick: run from checked bytes
    assert gate.argv == ("/bin/sh", "-c", "python3 gates/P1.py --full --only 'T.P1.*'")
    assert "lock run" in rt.quick_command(spec, "P1.core")


def test_a_runtime_program_that_fails_is_run_again_then_stops_the_run() -> None:
    d = Driver(plan(front(), blocks=1, rounds_per_block=1))
    real = d.receipt
    calls: list[str] = []

    def receipt(c: Run) -> dict[str, object]:
        if ":diff:" in c.key:
            calls.append(c.key)
            return {
                "output": 'TREESYNC {"error": "OSError: disk full"}\n',
                "exit_code": 3,
                "error": "exited with code 3",
            }
        return real(c)

    d.receipt = receipt  # type: ignore[method-assign]
    d.run()
    assert calls == ["pll:P1:diff:1:core"] * 2
    assert [a.what for a in d.of(fev.Anomaly)] == ["runtime-failed", "runtime-failed"]
    assert d.finished is not None and d.finished.status == "failed"
    assert "diff for front P1 failed twice: OSError: disk full" in d.finished.reason
    assert not d.of(fev.VerdictRecorded)  # nothing was judged on a copy never compared


def test_approved_fronts_land_in_the_source_one_at_a_time() -> None:
    d = Driver(plan(front("P1"), front("P2")))
    landing: list[list[str]] = []
    while d.step():
        landing.append(
            [c.key for c in d.commands[-1] if isinstance(c, Run) and ":integrate:" in c.key]
        )
    assert max(len(k) for k in landing) == 1  # never two git commits at once
    assert [e.front for e in d.of(fev.FrontIntegrated)] == ["P1", "P2"]


def test_a_rounds_handoff_note_reaches_the_next_rounds_builder_and_critic_cut_to_15_lines() -> None:
    long_note = "\n".join(f"r1 line {i}" for i in range(1, 31))
    d = Driver(
        plan(front(), blocks=1, rounds_per_block=2),
        Script(
            gate=lambda f, r: {"T.a": False},
            handoff=lambda f, r, o: long_note if r == 1 else f"r{r} note of {o}",
        ),
    ).run()
    briefs = [c.note["brief"] for cs in d.commands for c in cs if isinstance(c, StartTurn)]
    by_round = {(b["round"], b["role"]): b for b in briefs}
    assert set(by_round) == {(1, "builder"), (1, "critic"), (2, "builder"), (2, "critic")}
    cut = "\n".join(f"r1 line {i}" for i in range(1, 16))  # its first 15 lines
    assert by_round[2, "builder"]["handoffs"] == {"core": cut}
    assert by_round[2, "critic"]["earlier_handoffs"] == {"core": cut}
    # The critic also reads this round's note; round 1 had no note before it.
    assert by_round[2, "critic"]["builders"]["core"]["handoff"] == "r2 note of core"
    assert by_round[1, "builder"]["handoffs"] == by_round[1, "critic"]["earlier_handoffs"] == {}


def test_the_builders_images_reach_the_critic_after_its_copy_is_synced() -> None:
    sheet = {"name": ".parrallello/sheets/sheet-1.png", "from": "core", "file": "x.png"}
    taken = {"taken": [{**sheet, "size": [1600, 900], "resized_from": [3200, 1800]}]}
    refused = {"refused": [{"from": "core", "file": "y.png", "why": "a symbolic link"}]}
    d = Driver(
        plan(front(), blocks=1, rounds_per_block=2),
        Script(gate=lambda f, r: {"T.a": r >= 2}, sheets=lambda f, r: {**taken, **refused}),
    ).run()
    runs = [c.key for cs in d.commands for c in cs if isinstance(c, Run)]
    for rnd in (1, 2):  # after the mirror that would remove them, before the critic
        assert runs.index(f"pll:P1:csync:{rnd}:") < runs.index(f"pll:P1:sheets:{rnd}:")
    (run,) = [c for cs in d.commands for c in cs if isinstance(c, Run) and "sheets:1" in c.key]
    assert run.place == "critics/P1" and run.reads == ("builders/P1.core",)
    assert "--max" in run.argv and run.argv[run.argv.index("--max") + 1] == "3"
    assert run.argv[run.argv.index("--px") + 1] == "1600"
    said = d.of(SheetsTaken)
    assert [(s.round, s.taken, s.resized, s.refused_count) for s in said] == [
        (1, [sheet["name"]], 1, 1),
        (2, [sheet["name"]], 1, 1),
    ]
    assert (
        said[0].describe()
        == "P1 round 1: 1 contact sheet taken to the critic (1 downsized), 1 refused"
    )
    critic = next(
        c for cs in d.commands for c in cs if isinstance(c, StartTurn) and c.role == "critic"
    )
    sheets = critic.note["brief"]["contact_sheets"]
    assert sheets["dir"] == ".parrallello/sheets" and sheets["refused"] == 1
    assert [f["name"] for f in sheets["files"]] == [sheet["name"]]


def test_a_round_with_no_builder_runs_no_sheets_and_a_round_with_no_images_says_nothing() -> None:
    d = Driver(plan(front(), blocks=1, rounds_per_block=2)).run()
    assert d.of(SheetsTaken) == []  # no builder left an image: no line
    lone = Driver(
        plan(front(), blocks=1, rounds_per_block=1), Script(gate=lambda f, r: {"T.a": True})
    ).run()  # nothing to fix: the round is the critic's alone
    runs = [c.key for cs in lone.commands for c in cs if isinstance(c, Run)]
    assert not any(":sheets:" in k for k in runs) and any(":csync:" in k for k in runs)
