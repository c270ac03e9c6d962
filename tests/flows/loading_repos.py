"""Real flows in real places for the loading tests: files, packages, git repositories (with
tags), installed distributions (a dist-info with an entry point) and indexes."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

from tests.helpers import REPORT_OK, actor

# A small complete flow: `worker` takes `turns` turns, then the run finishes saying MESSAGE.
# OTHER is a second flow in the same module (a variant: `NAME:OTHER`, `#subdir:OTHER`).
FLOW_SOURCE = """
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from flamechase.flow import (Command, Event, FinishRun, Flow, FlowParams, RunSetup, StartTurn,
                             TurnContext, events)

MESSAGE = {message!r}


class OnceParams(FlowParams):
    turns: int = Field(default=1, ge=1, le=10)


class OnceState(BaseModel):
    model_config = ConfigDict(frozen=True)
    turns: int
    done: int = 0


class Once(Flow[OnceState]):
    name = {name!r}
    summary = "A worker takes a few turns."
    version = {version!r}
    Params = OnceParams
    State = OnceState

    def roles(self, params: FlowParams) -> list[str]:
        return ["worker"]

    def start(self, setup: RunSetup) -> OnceState:
        assert isinstance(setup.params, OnceParams)
        return OnceState(turns=setup.params.turns)

    def evolve(self, state: OnceState, event: Event) -> OnceState:
        if isinstance(event, events.TurnValid):
            return state.model_copy(update={{"done": state.done + 1}})
        return state

    def decide(self, state: OnceState, now: float) -> Sequence[Command]:
        if state.done >= state.turns:
            return [FinishRun("finished", MESSAGE)]
        return [StartTurn(role="worker", lane=None, number=state.done + 1)]

    def prompt(self, state: OnceState, ctx: TurnContext) -> str:
        return f"work, then report to {{ctx.report_path}}"


class Other(Once):
    name = {name!r} + "_other"


FLOW = Once()
OTHER = Other()
"""


def flow_source(message: str = "done", name: str = "once", version: str = "1") -> str:
    return FLOW_SOURCE.format(message=message, name=name, version=version)


def write_flow_package(
    parent: Path, package: str, message: str = "done", name: str = "once"
) -> Path:
    pkg = parent / package
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(flow_source(message, name))
    return pkg


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "tag.gpgsign=false",
            *args,
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


def make_repo(
    root: Path, message: str = "v1", subdir: str = "once", tag: str | None = "v1"
) -> tuple[Path, str]:
    """A git repository whose `subdir` is a flow package; (repo, commit)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    write_flow_package(root, subdir, message)
    return root, commit(root, message, tag)


def commit(
    repo: Path, message: str, tag: str | None = None, *, annotated: bool = True, force: bool = False
) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    if tag:
        flags = ["-a", "-m", tag] if annotated else []
        git(repo, "tag", *(["-f"] if force else []), *flags, tag)
    return git(repo, "rev-parse", "HEAD")


def change_flow(repo: Path, message: str, subdir: str = "once") -> None:
    (repo / subdir / "__init__.py").write_text(flow_source(message))


def worker(tmp: Path) -> str:
    return f"worker=exec:{actor(tmp, 'worker.sh', REPORT_OK)}"


def install_distribution(
    site: Path,
    dist: str,
    package: str,
    entry_points: dict[str, str],
    message: str = "from an entry point",
) -> None:
    """An installed distribution as pip leaves it in site-packages: the package, and a
    dist-info with METADATA and entry_points.txt (group flamechase.flows)."""
    write_flow_package(site, package, message, name=package)
    info = site / f"{dist}-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[flamechase.flows]\n{lines}")


def index_yaml(entries: list[dict[str, str]]) -> str:
    out = ["flows:"]
    for entry in entries:
        first = True
        for key, value in entry.items():
            out.append(f"  {'- ' if first else '  '}{key}: {value!r}")
            first = False
    return textwrap.dedent("\n".join(out)) + "\n"
