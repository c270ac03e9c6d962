"""`flamechase flows list|show|install|uninstall`, with indexes made here (files,
directories of flow.yaml manifests and git repositories) pointing at git+file:// flows."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from flamechase.flows import builtin_names
from tests.flows.loading_repos import (
    change_flow,
    commit,
    git,
    index_yaml,
    install_distribution,
    make_repo,
    worker,
)
from tests.helpers import cli, status


def _refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    for word in words:
        assert word in line, line


def _entry(repo: Path, sha: str, version: str = "1.0.0", ref: str | None = "v1") -> dict[str, str]:
    entry = {
        "name": "once",
        "version": version,
        "description": "a worker takes turns",
        "repo": f"file://{repo}",
        "commit": sha,
        "subdir": "once",
        "license": "MIT",
    }
    if ref:
        entry["ref"] = ref
    return entry


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """A flow repository with tags v1 and v2, and an index file listing both."""
    repo, first = make_repo(tmp_path / "repo", message="v1 ran")
    change_flow(repo, "v2 ran")
    second = commit(repo, "v2", "v2")
    index = tmp_path / "index.yaml"
    index.write_text(index_yaml([_entry(repo, first), _entry(repo, second, "1.1.0", "v2")]))
    return tmp_path, index, first, second


def test_list_shows_the_built_in_flows_with_their_versions(tmp_path: Path) -> None:
    rows = json.loads(cli("flows", "list", "--json", cwd=tmp_path, check=True).stdout)
    got = {r["name"]: r for r in rows}
    assert got["parallel_flame_chase"]["version"] == "2"
    assert got["flame_chase"]["from"] == "built-in"
    text = cli("flows", "list", cwd=tmp_path, check=True).stdout
    # Columns are as wide as the longest name (parallel_flame_chase:git_pr and others).
    assert re.search(r"^parallel_flame_chase +2 +built-in ", text, re.MULTILINE), text


def test_install_pins_the_recorded_commit_and_the_flow_runs(indexed) -> None:
    tmp, index, _first, second = indexed
    proc = cli("flows", "install", "once", "--index", str(index), cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    assert f"installed once 1.1.0 from file://{tmp}/repo@{second}#once" in proc.stdout
    rows = json.loads(cli("flows", "list", "--json", cwd=tmp, check=True).stdout)
    [row] = [r for r in rows if r["name"] == "once"]
    assert (row["version"], row["commit"]) == ("1.1.0", second)
    ws = tmp / "ws"
    ws.mkdir()
    run = cli(
        "exec",
        "-f",
        "once",
        "-a",
        worker(tmp),
        "-p",
        "budget.turns=2,rest_seconds=0.05",
        "do it",
        cwd=ws,
    )
    assert run.returncode == 0, run.stderr
    assert "v2 ran" in run.stderr
    assert status(ws)["flow_source"] == f"git+file://{tmp}/repo@{second}#once"
    # Another flow in the same module: NAME:VARIANT.
    run = cli(
        "exec",
        "-f",
        "once:OTHER",
        "-a",
        worker(tmp),
        "-p",
        "budget.turns=2,rest_seconds=0.05",
        "do it",
        cwd=ws,
    )
    assert run.returncode == 0, run.stderr
    assert status(ws)["flow"] == "once_other"


def test_install_a_named_version_then_uninstall(indexed) -> None:
    tmp, index, first, _second = indexed
    proc = cli("flows", "install", "once@1.0.0", "--index", str(index), cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    assert first in proc.stdout
    shown = cli("flows", "show", "once", cwd=tmp, check=True).stdout
    assert f"source: git+file://{tmp}/repo@{first}#once" in shown
    assert "  worker" in shown and "turns = 1 (>= 1, <= 10)" in shown
    assert "variants: once:OTHER" in shown
    assert cli("flows", "uninstall", "once", cwd=tmp, check=True).returncode == 0
    (tmp / "ws").mkdir()
    _refused(
        cli("exec", "-f", "once", "-a", worker(tmp), "-p", "budget.turns=1", "x", cwd=tmp / "ws"),
        "no flow called 'once'",
    )


def test_install_refuses_a_tag_that_no_longer_names_the_recorded_commit(indexed) -> None:
    tmp, index, _first, _second = indexed
    change_flow(tmp / "repo", "v2 again")
    commit(tmp / "repo", "re-tag", "v2", force=True)
    _refused(
        cli("flows", "install", "once", "--index", str(index), cwd=tmp),
        "the index records commit",
        "refusing to install",
    )
    assert not (tmp / "fc-home" / "flows" / "installed").exists()


def test_install_refusals_are_one_line(indexed) -> None:
    tmp, index, _first, _second = indexed
    _refused(
        cli("flows", "install", "nope", "--index", str(index), cwd=tmp),
        "has no flow 'nope'; it has: once",
    )
    _refused(
        cli("flows", "install", "once@9.9", "--index", str(index), cwd=tmp),
        "no version 9.9 of once; it has 1.0.0, 1.1.0",
    )
    _refused(cli("flows", "install", "once", cwd=tmp), "index official has no flow 'once'")
    bad = tmp / "bad.yaml"
    bad.write_text("flows:\n  - name: once\n    version: 1\n    repo: x\n    commit: abc\n")
    _refused(cli("flows", "install", "once", "--index", str(bad), cwd=tmp), "entry 1: commit")
    missing = tmp / "missing.yaml"
    missing.write_text(index_yaml([_entry(tmp / "repo", "0" * 40, ref=None)]))
    _refused(cli("flows", "install", "once", "--index", str(missing), cwd=tmp), "has no commit")
    gone = tmp / "gone.yaml"
    gone.write_text(index_yaml([_entry(tmp / "nowhere", "0" * 40)]))
    _refused(cli("flows", "install", "once", "--index", str(gone), cwd=tmp), "could not be reached")


def test_an_index_in_a_git_repository_of_manifests(indexed) -> None:
    tmp, _index, first, second = indexed
    verse = tmp / "flowverse"
    (verse / "flows" / "once").mkdir(parents=True)
    git(verse, "init", "-q")
    (verse / "flows" / "once" / "flow.yaml").write_text(
        index_yaml([_entry(tmp / "repo", first)])
        .replace("flows:\n  - ", "")
        .replace("\n    ", "\n")
    )
    commit(verse, "index")
    source = f"git+file://{verse}"
    shown = cli("flows", "show", "once", "--index", source, cwd=tmp, check=True).stdout
    assert f"1.0.0: v1 commit {first} #once" in shown and "not installed" in shown
    listed = cli("flows", "list", "--index", source, cwd=tmp, check=True).stdout
    assert "once" in listed and "index: git+file://" in listed
    env = {"FLAMECHASE_FLOW_INDEX": str(verse)}  # the checkout-free directory form
    proc = cli("flows", "install", "once", cwd=tmp, env=env)
    assert proc.returncode == 0, proc.stderr
    assert first in proc.stdout and second not in proc.stdout


def test_an_unreachable_index_still_lists_the_rest(tmp_path: Path) -> None:
    proc = cli("flows", "list", "--index", f"git+file://{tmp_path}/none", cwd=tmp_path)
    assert proc.returncode == 0
    assert "flame_chase" in proc.stdout
    [line] = proc.stderr.strip().splitlines()
    assert "could not be reached" in line


def test_an_installed_flow_whose_checkout_changed_is_refused(indexed) -> None:
    tmp, index, _first, second = indexed
    cli("flows", "install", "once", "--index", str(index), cwd=tmp, check=True)
    [checkout] = (tmp / "fc-home" / "flows" / "git").glob(f"*/{second}")
    (checkout / "once" / "extra.py").write_text("print('injected')\n")
    ws = tmp / "ws"
    ws.mkdir()
    _refused(
        cli("exec", "-f", "once", "-a", worker(tmp), "-p", "budget.turns=1", "x", cwd=ws),
        "was changed",
    )


def test_list_names_flows_of_installed_packages_without_importing_them(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_distribution(site, "acme-flows", "acme_once", {"acme": "acme_once:FLOW"})
    (site / "acme_once" / "__init__.py").write_text("raise SystemExit('imported!')\n")
    proc = cli("flows", "list", cwd=tmp_path, env={"PYTHONPATH": str(site)}, check=True)
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("acme ")]
    assert line.split() == ["acme", "1.2.3", "package", "acme-flows", "(acme_once:FLOW)"]


def test_an_installed_flow_named_like_a_built_in_runs_instead_of_it(indexed) -> None:
    # The seeds: "install parallel_flame_chase from the official flowverse", then run it.
    tmp, _index, _first, second = indexed
    entry = {**_entry(tmp / "repo", second, "1.1.0", "v2"), "name": "flame_chase"}
    index = tmp / "shadow.yaml"
    index.write_text(index_yaml([entry]))
    proc = cli("flows", "install", "flame_chase", "--index", str(index), cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    assert "-f flame_chase now runs the installed flow, not the built-in one" in proc.stdout
    # `flows list` says which of the two named flame_chase `-f flame_chase` runs.
    listed = cli("flows", "list", cwd=tmp, check=True).stdout.splitlines()
    mine = [ln for ln in listed if ln.startswith("flame_chase ")]
    assert len(mine) == 2, listed
    assert "built-in, not run: -f flame_chase runs the installed one" in mine[0]
    assert "installed (" in mine[1] and ", run by -f flame_chase" in mine[1]
    rows = json.loads(cli("flows", "list", "--json", cwd=tmp, check=True).stdout)
    assert [r.get("runs") for r in rows if r["name"] == "flame_chase"] == [False, True]
    # `exec --help` names every flow -f takes now, the installed one marked.
    helped = " ".join(cli("exec", "--help", cwd=tmp, check=True).stdout.split())
    assert "flame_chase (installed)" in helped, helped
    assert all(n in helped for n in builtin_names())
    ws = tmp / "ws"
    ws.mkdir()
    run = cli(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        worker(tmp),
        "-p",
        "budget.turns=1,rest_seconds=0.05",
        "do it",
        cwd=ws,
    )
    assert run.returncode == 0, run.stderr
    assert "v2 ran" in run.stderr
    assert status(ws)["flow_source"] == f"git+file://{tmp}/repo@{second}#once"
    cli("flows", "uninstall", "flame_chase", cwd=tmp, check=True)
    back = cli(
        "exec", "-f", "flame_chase", "-a", worker(tmp), "-p", "budget.turns=1", "do it", cwd=ws
    )
    assert "v2 ran" not in back.stderr  # the built-in again (it wants two roles)


def test_a_json_index_lists_and_installs_through_the_environment_variable(indexed) -> None:
    tmp, _yaml, first, second = indexed
    verse = tmp / "verse"
    verse.mkdir()
    # A bare JSON list in index.json, found in its directory by FLAMECHASE_FLOW_INDEX.
    (verse / "index.json").write_text(
        json.dumps([_entry(tmp / "repo", first), _entry(tmp / "repo", second, "1.1.0", "v2")])
    )
    env = {"FLAMECHASE_FLOW_INDEX": str(verse)}
    rows = json.loads(cli("flows", "list", "--json", cwd=tmp, env=env, check=True).stdout)
    offered = [(r["version"], r["commit"], r["from"]) for r in rows if r["name"] == "once"]
    assert offered == [("1.0.0", first, f"index: {verse}"), ("1.1.0", second, f"index: {verse}")]
    shown = cli("flows", "show", "once", cwd=tmp, env=env, check=True).stdout
    assert shown.splitlines()[:2] == ["once 1.1.0: a worker takes turns", f"index: {verse}"]
    proc = cli("flows", "install", "once@1.0.0", cwd=tmp, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"installed once 1.0.0 from file://{tmp}/repo@{first}#once" in proc.stdout
    rows = json.loads(cli("flows", "list", "--json", cwd=tmp, check=True).stdout)
    [row] = [r for r in rows if r["name"] == "once"]  # no index now: the installed one
    assert (row["version"], row["commit"]) == ("1.0.0", first)
    ws = tmp / "ws"
    ws.mkdir()
    run = cli(
        "exec",
        "-f",
        "once",
        "-a",
        worker(tmp),
        "-p",
        "budget.turns=2,rest_seconds=0.05",
        "do it",
        cwd=ws,
    )
    assert run.returncode == 0, run.stderr
    assert "v1 ran" in run.stderr


def test_a_json_index_entry_missing_its_commit_is_refused_in_one_line(tmp_path: Path) -> None:
    index = tmp_path / "index.json"
    index.write_text(json.dumps({"flows": [{"name": "once", "version": "1", "repo": "x/y"}]}))
    _refused(
        cli("flows", "install", "once", "--index", str(index), cwd=tmp_path),
        f"index {index}: entry 1: commit: Field required",
    )


@pytest.mark.parametrize("subdir", ["../../../../../evil", "once/../../../../../../evil", "/evil"])
def test_an_index_subdir_out_of_the_checkout_is_refused_and_runs_nothing(
    indexed, subdir: str
) -> None:
    tmp, _index, first, _second = indexed
    marker = tmp / "ran"
    # Beside the state home, where `<home>/flows/git/<url key>/<commit>/` + subdir reaches.
    evil = tmp / "evil"
    evil.mkdir()
    (evil / "__init__.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        + (tmp / "repo" / "once" / "__init__.py").read_text()
    )
    index = tmp / "climbing.yaml"
    index.write_text(index_yaml([{**_entry(tmp / "repo", first), "subdir": subdir}]))
    _refused(
        cli("flows", "install", "once", "--index", str(index), cwd=tmp),
        f"index {index}: entry 1: subdir",
        "inside the repository",
    )
    assert not marker.exists()
    assert not (tmp / "fc-home" / "flows" / "installed").exists()


def test_an_index_in_git_that_links_out_of_its_repository_is_refused(indexed) -> None:
    tmp, _index, first, _second = indexed
    elsewhere = tmp / "elsewhere.yaml"  # not part of the index's commit
    elsewhere.write_text(index_yaml([_entry(tmp / "repo", first)]))
    verse = tmp / "flowverse"
    verse.mkdir()
    git(verse, "init", "-q")
    (verse / "index.yaml").symlink_to(elsewhere)
    commit(verse, "index")
    proc = cli("flows", "show", "once", "--index", f"git+file://{verse}", cwd=tmp)
    _refused(proc, "index.yaml is a symlink out of the repository")


def test_an_installed_flow_edited_behind_gits_back_runs_its_commit(indexed) -> None:
    tmp, index, _first, second = indexed
    cli("flows", "install", "once", "--index", str(index), cwd=tmp, check=True)
    ws = tmp / "ws"
    ws.mkdir()
    args = ("exec", "-f", "once", "-a", worker(tmp), "-p", "budget.turns=1,resume_mode=fresh")
    assert cli(*args, "do it", cwd=ws).returncode == 0
    clean = status(ws)["flow_hash"]
    [checkout] = (tmp / "fc-home" / "flows" / "git").glob(f"*/{second}")
    marker = tmp / "ran"
    git(checkout, "update-index", "--assume-unchanged", "once/__init__.py")
    (checkout / "once" / "__init__.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        + (checkout / "once" / "__init__.py").read_text().replace("v2 ran", "edited ran")
    )
    run = cli(*args, "do it", cwd=ws)
    assert run.returncode == 0, run.stderr
    assert "v2 ran" in run.stderr and not marker.exists()
    assert status(ws)["flow_hash"] == clean  # hashed from the commit, as it ran


# ---- show: every flow, whatever its params ----------------------------------------------------


def _show(name: str) -> list[str]:
    from click.testing import CliRunner

    from flamechase.cli.flows import show_command

    result = CliRunner().invoke(show_command, [name])
    assert result.exception is None, result.output
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


@pytest.mark.parametrize("name", builtin_names())
def test_show_works_for_every_built_in_flow_and_variant(name: str) -> None:
    from flamechase.loader import load_flow

    flow = load_flow(name)
    lines = _show(name)
    assert lines[0] == f"{flow.name} {flow.version}: {flow.summary}"
    assert f"source: builtin:{name}" in lines
    roles = lines.index("roles (-a, in order):")
    first = flow.roles(flow.Params.model_construct())[0]
    assert lines[roles + 1].split(":")[0].split(" (")[0].strip() == first
    assert any(line.startswith("params (-p") for line in lines)
    # Every role says what it is for, in the flow's own words.
    end = next(i for i, ln in enumerate(lines) if not ln.startswith("  ") and i > roles)
    for line in lines[roles + 1 : end]:
        name, _, about = line.partition(": ")
        assert about.strip() and "describes it no further" not in about, line


def test_show_names_the_roles_a_switch_adds() -> None:
    lines = _show("parrallello")
    assert any(
        ln.startswith("  with -p lead=true: lead: a fresh session between a front's blocks")
        for ln in lines
    ), lines


def test_show_marks_what_git_pr_requires() -> None:
    lines = _show("parallel_flame_chase:git_pr")
    [evaluator] = [ln for ln in lines if ln.startswith("  evaluator ")]
    assert evaluator.startswith("  evaluator (required; str; length <= 1000): ")
    assert any(
        ln.startswith("  lane_3_actor_b: lane-3, taking turns, in its own git") for ln in lines
    )


REQUIRED = """
from pydantic import Field
from flamechase.flow import Flow, FlowParams, FlowState


class Params(FlowParams):
    target: str = Field(description="what to aim at")
    solvers: int = Field(ge=2, le=8, description="how many compete")


class State(FlowState):
    n: int = 0


class Needy(Flow[State, Params]):
    name = "needy"
    summary = "needs a target"

    def roles(self, params):
        return [f"solver_{i}" for i in range(1, params.solvers + 1)] if {roles} else ["judge"]

    def start(self, setup):
        return State()

    def evolve(self, state, event):
        return state

    def decide(self, state, now):
        return []

    def prompt(self, state, ctx):
        return ""


FLOW = Needy()
"""


def test_show_marks_the_required_params_of_a_flow_file(tmp_path: Path) -> None:
    path = tmp_path / "needy.py"
    path.write_text(REQUIRED.replace("{roles}", "False"))
    lines = cli("flows", "show", str(path), cwd=tmp_path, check=True).stdout.splitlines()
    assert lines[0] == "needy 1: needs a target"
    assert lines[lines.index("roles (-a, in order):") + 1] == (
        "  judge: works outside the lanes (the flow describes it no further)"
    )
    assert "  target (required; str): what to aim at" in lines
    assert "  solvers (required; int; >= 2; <= 8): how many compete" in lines


def test_show_says_when_the_roles_depend_on_a_required_param(tmp_path: Path) -> None:
    path = tmp_path / "needy.py"
    path.write_text(REQUIRED.replace("{roles}", "True"))
    proc = cli("flows", "show", str(path), cwd=tmp_path, check=True)
    assert "roles: depend on solvers, target (give them with -p)" in proc.stdout.splitlines()
    assert "Traceback" not in proc.stderr


def test_flows_show_says_where_each_cli_takes_the_flows_skill(tmp_path: Path) -> None:
    shown = cli("flows", "show", "parallel_flame_chase", cwd=tmp_path, check=True).stdout
    [line] = [ln for ln in shown.splitlines() if ln.startswith("skill parallel-flame-chase")]
    for where in ("claude: a plugin", "codex: the thread's developer", "gemini: a GEMINI.md"):
        assert where in line
    assert "opencode: an instructions file" in line
    assert "other agents (exec:, acp:) get it in the prompt" in line


LANED = """
from flamechase.flow import Flow, FlowParams, FlowState, LaneDef


class State(FlowState):
    n: int = 0


class Pair(Flow[State]):
    name = "pair"
    summary = "two take turns, a third copies"

    def roles(self, params):
        return ["writer", "reader", "copier"]

    def lanes(self, params):
        return [LaneDef("main", ("writer", "reader")), LaneDef("side", ("copier",), "side")]

    def start(self, setup):
        return State()

    def evolve(self, state, event):
        return state

    def decide(self, state, now):
        return []

    def prompt(self, state, ctx):
        return ""


FLOW = Pair()
"""


def test_show_says_a_role_by_its_lane_when_the_flow_describes_none(tmp_path: Path) -> None:
    path = tmp_path / "pair.py"
    path.write_text(LANED)
    lines = cli("flows", "show", str(path), cwd=tmp_path, check=True).stdout.splitlines()
    at = lines.index("roles (-a, in order):")
    assert lines[at + 1 : at + 4] == [
        "  writer: takes turns in main, in turn with reader, on your tree",
        "  reader: takes turns in main, in turn with writer, on your tree",
        "  copier: takes turns in side, in its own place (side)",
    ]


def test_show_says_how_to_run_without_a_role_the_flow_can_do_without() -> None:
    lines = _show("parrallello")
    prep = next(ln for ln in lines if ln.startswith("  prep: "))
    assert prep.endswith("(without it: -p prep=false)"), prep
    planner = next(ln for ln in lines if ln.startswith("  planner: "))
    assert planner.endswith("(without it: -p plan=PLAN.yaml)"), planner
    assert not any("without it" in ln for ln in lines if ln.startswith(("  builder", "  critic")))
