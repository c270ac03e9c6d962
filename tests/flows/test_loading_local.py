"""`-f` forms without git: a built-in, NAME:VARIANT, a file or package path, an importable
`package.module:FLOW`, an installed package's entry point; and their one-line refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import flamechase.flows as flows
from flamechase.errors import FlowNotFound
from flamechase.loader import flow_identity, load_flow
from tests.engine.mistakes import Mistake, source
from tests.flows.loading_repos import flow_source, install_distribution, worker, write_flow_package
from tests.helpers import REPORT_OK, actor, cli, status


def _exec(ws: Path, tmp: Path, ref: str, env: dict[str, str] | None = None):
    return cli(
        "exec",
        "-f",
        ref,
        "-a",
        worker(tmp),
        "-p",
        "budget.turns=3,rest_seconds=0.05",
        "do it",
        cwd=ws,
        env=env,
    )


def _refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    for word in words:
        assert word in line, line


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def test_a_flow_file_runs_and_is_recorded_by_its_path(tmp_path: Path, ws: Path) -> None:
    path = tmp_path / "flows" / "once.py"
    path.parent.mkdir()
    path.write_text(flow_source("file ran"))
    proc = _exec(ws, tmp_path, str(path))
    assert proc.returncode == 0, proc.stderr
    assert "file ran" in proc.stderr
    assert status(ws)["flow_source"] == f"path:{path}"


def test_a_package_directory_runs_and_a_named_flow_in_it(tmp_path: Path, ws: Path) -> None:
    pkg = write_flow_package(tmp_path / "flows", "once", "package ran")
    proc = _exec(ws, tmp_path, f"{pkg}:OTHER")
    assert proc.returncode == 0, proc.stderr
    st = status(ws)
    assert st["flow"] == "once_other"
    assert st["flow_source"] == f"path:{pkg}:OTHER"


def test_a_path_flow_hashes_the_same_in_every_process(tmp_path: Path) -> None:
    path = tmp_path / "once.py"
    path.write_text(flow_source())
    code = (
        f"from flamechase.loader import load_flow, flow_identity as i; "
        f"print(*i(load_flow({str(path)!r}), ''))"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(n)},
        ).stdout
        for n in (1, 2, 3)
    }
    assert len(seen) == 1


def test_an_edited_flow_file_is_loaded_anew_in_the_same_process(tmp_path: Path) -> None:
    path = tmp_path / "once.py"
    path.write_text(flow_source("first"))
    first = load_flow(str(path))
    path.write_text(flow_source("second"))
    second = load_flow(str(path))
    assert sys.modules[type(second).__module__].MESSAGE == "second"
    assert flow_identity(first, "")[1] != flow_identity(second, "")[1]


def test_an_importable_module_runs(tmp_path: Path, ws: Path) -> None:
    site = tmp_path / "site"
    write_flow_package(site / "acme", "reviewflows", "module ran")
    (site / "acme" / "__init__.py").write_text("")
    env = {"PYTHONPATH": str(site)}
    proc = _exec(ws, tmp_path, "acme.reviewflows:FLOW", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "module ran" in proc.stderr
    assert status(ws)["flow_source"] == "module:acme.reviewflows:FLOW"
    _refused(
        _exec(ws, tmp_path, "acme.reviewflows:NOPE", env=env),
        "defines no NOPE",
        "it has FLOW, OTHER",
    )
    _refused(_exec(ws, tmp_path, "acme.missing:FLOW", env=env), "no module named")


def test_an_installed_entry_point_runs_and_its_variant(tmp_path: Path, ws: Path) -> None:
    site = tmp_path / "site"
    install_distribution(
        site, "acme-flows", "acme_once", {"acme": "acme_once:FLOW"}, message="entry point ran"
    )
    env = {"PYTHONPATH": str(site)}
    proc = _exec(ws, tmp_path, "acme", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "entry point ran" in proc.stderr
    st = status(ws)
    assert st["flow"] == "acme_once"
    assert st["flow_source"] == "entry-point:acme=acme_once:FLOW (acme-flows 1.2.3)"
    proc = _exec(ws, tmp_path, "acme:OTHER", env=env)
    assert proc.returncode == 0, proc.stderr
    assert status(ws)["flow"] == "acme_once_other"
    _refused(_exec(ws, tmp_path, "acme:NOPE", env=env), "defines no NOPE")


def test_a_built_in_variant_comes_from_the_variants_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(flows.VARIANTS, "flame_chase:again", "flamechase.flows.flame_chase")
    flow = load_flow("flame_chase:again")
    assert flow.name == "flame_chase"
    assert flow_identity(flow, "flame_chase:again")[0] == "builtin:flame_chase:again"
    with pytest.raises(FlowNotFound, match="its variants: flame_chase:again"):
        load_flow("flame_chase:nope")


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ("parallel_flame_chase:nope", "flow parallel_flame_chase has no variant 'nope'"),
        ("no_such_flow", "no flow called 'no_such_flow'; flows here: flame_chase"),
        ("./missing.py", "does not exist"),
        ("notes.txt", "is not a flow"),
        ("empty_dir", "directory without __init__.py"),
        ("noflow.py", "defines no FLOW"),
        ("wrongflow.py", "FLOW is a int, not a flamechase.flow.Flow"),
        ("broken.py", "failed to import: ZeroDivisionError"),
        ("flamechase.flows.flame_chase:NOPE", "defines no NOPE"),
        ("no_such_pkg.mod:FLOW", "no module named 'no_such_pkg'"),
        ("", "-f is empty"),
    ],
)
def test_refusals_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ref: str, words: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("not python\n")
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "noflow.py").write_text("X = 1\n")
    (tmp_path / "wrongflow.py").write_text("FLOW = 3\n")
    (tmp_path / "broken.py").write_text("1 / 0\n")
    with pytest.raises(FlowNotFound) as caught:
        load_flow(ref)
    message = str(caught.value)
    assert words in message and "\n" not in message


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ("notes.txt", "is not a flow"),
        ("noflow.py", "defines no FLOW"),
        ("parallel_flame_chase:nope", "has no variant"),
    ],
)
def test_exec_refuses_them_with_exit_2_and_writes_nothing(
    ws: Path, state_home: Path, ref: str, words: str
) -> None:
    (ws / "notes.txt").write_text("not python\n")
    (ws / "noflow.py").write_text("X = 1\n")
    _refused(_exec(ws, ws.parent, ref), words)
    assert not state_home.exists()


def _relay_package(parent: Path, words: str) -> Path:
    """A package flow whose prompt comes from a helper it loads with importlib, lazily."""
    pkg = parent / "relay"
    pkg.mkdir(parents=True, exist_ok=True)
    m = Mistake(
        "relay",
        {"prompt": 'return importlib.import_module(__name__ + ".words").PROMPT'},
        (),
        extra="\nimport importlib\n",
    )
    (pkg / "__init__.py").write_text(source(m))
    (pkg / "words.py").write_text(f"PROMPT = {words!r}\n")
    return pkg


def test_a_helper_loaded_with_importlib_is_in_the_code_hash(tmp_path: Path) -> None:
    pkg = _relay_package(tmp_path, "first words")
    before = flow_identity(load_flow(str(pkg)), "")[1]
    (pkg / "words.py").write_text("PROMPT = 'other words'\n")
    assert flow_identity(load_flow(str(pkg)), "")[1] != before
    (pkg / "notes.py").write_text("# never imported, still the flow's code\n")
    assert flow_identity(load_flow(str(pkg)), "")[1] != before


def test_a_resume_after_editing_a_helper_needs_refresh(tmp_path: Path, ws: Path) -> None:
    pkg = _relay_package(tmp_path / "flows", "first words")
    agent = actor(
        tmp_path, "agent.sh", 'cat "$FLAMECHASE_PROMPT" >> PROMPTS; echo >> PROMPTS\n' + REPORT_OK
    )

    def run(*extra: str, turns: int) -> subprocess.CompletedProcess[str]:
        return cli(
            "exec", "-f", str(pkg), "-a", f"author=exec:{agent}", "-a",
            f"reviewer=exec:{agent}", "-p", f"budget.turns={turns},rest_seconds=0.05",
            *extra, "do it", cwd=ws,
        )  # fmt: skip

    assert run(turns=1).returncode == 0  # the budget ends it after the first of two turns
    (pkg / "words.py").write_text("PROMPT = 'second words'\n")
    _refused(run(turns=2), "other code of flow mistake", "--refresh")
    proc = run("--refresh", turns=2)
    assert proc.returncode == 0, proc.stderr
    said = (ws / "PROMPTS").read_text()  # each prompt: the flow's words, then the runtime's
    assert said.startswith("first words\n") and "second words" in said.split("first words")[1]
