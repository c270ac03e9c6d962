"""`--executor local|ray[=ADDRESS]` and `lane_resources.*`: parsed, or refused before anything
is written (exit 2, one line)."""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path

import pytest

from flamechase.engine.remote import options
from flamechase.errors import ParamError, UsageError
from tests.helpers import REPORT_OK, actor, cli


def test_lane_resources_become_ray_options() -> None:
    settings: dict[str, object] = {
        "budget.turns": "3",
        "lane_resources.cpus": "2",
        "lane_resources.memory": "4G",
        "lane_resources.GPU": "1",
        "lane_resources.lane_slot": "0.5",
    }
    taken = options.take_settings(settings)
    assert settings == {"budget.turns": "3"}
    choice = options.choose("ray=10.0.0.5:6379", taken)
    assert choice.address == "10.0.0.5:6379"
    assert choice.resources.ray_options() == {
        "num_cpus": 2.0,
        "memory": 4 * 1024**3,
        "num_gpus": 1.0,
        "resources": {"lane_slot": 0.5},
    }
    assert options.choose("ray", {}).resources.ray_options() == {"num_cpus": 1.0}


@pytest.mark.parametrize(
    ("text", "settings", "error", "match"),
    [
        ("bogus", {}, UsageError, "expected local, ray or ray=ADDRESS"),
        ("ray=", {}, UsageError, "give the cluster's address"),
        ("local", {"lane_resources.cpus": "2"}, ParamError, "use them with --executor ray"),
        ("ray", {"lane_resources.cpus": "lots"}, ParamError, "expected a number"),
        ("ray", {"lane_resources.memory": "4 parsecs"}, ParamError, "expected a size"),
        ("ray", {"lane_resources.a b": "1"}, ParamError, "not a resource name"),
        ("ray", {"ray.lane_1": "moon"}, ParamError, "expected head .* or node"),
        ("local", {"ray.lane_1": "node"}, ParamError, "a setting of the Ray executor"),
    ],
)
def test_bad_executor_settings_are_refused(
    text: str, settings: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        options.choose(text, settings)


def test_lane_one_stays_here_unless_asked_for_on_a_node() -> None:
    assert not options.choose("ray", {}).lane_1_on_node
    assert options.choose("ray", options.take_settings({"ray.lane_1": "node"})).lane_1_on_node
    assert not options.choose("ray", {"ray.lane_1": "head"}).lane_1_on_node


def test_exec_refuses_lane_one_on_a_node_outside_a_git_repository(
    source_tree: Path, tmp_path: Path
) -> None:
    a = actor(tmp_path, "a.sh", REPORT_OK)
    out = cli(
        "exec",
        "-f",
        "flame_chase",
        "--executor",
        "ray",
        "-a",
        f"exec:{a}",
        "-a",
        f"exec:{a}",
        "-p",
        "budget.turns=2,ray.lane_1=node",
        "x",
        cwd=source_tree,
    )
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()
    assert "ray.lane_1=node" in line and "is not a git repository" in line
    assert not (Path(os.environ["FLAMECHASE_HOME"]) / "runs").exists()


def test_exec_refuses_lane_one_on_a_node_for_a_flow_without_a_lane_in_the_tree(
    source_tree: Path, tmp_path: Path
) -> None:
    a = actor(tmp_path, "a.sh", REPORT_OK)
    agents = ",".join(f"lane_{n}_actor_{x}=exec:{a}" for n in (1, 2, 3) for x in "ab")
    out = cli(
        "exec",
        "-f",
        "parallel_flame_chase:git_pr",
        "--executor",
        "ray",
        "-a",
        f"coordinator=exec:{a}",
        "-a",
        agents,
        "-p",
        "budget.turns=2,evaluator=true,ray.lane_1=node",
        "x",
        cwd=source_tree,
    )
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()
    assert "no lane of parallel_flame_chase:git_pr works in your tree" in line
    assert not (Path(os.environ["FLAMECHASE_HOME"]) / "runs").exists()


def test_a_single_lane_resources_value_says_how_to_write_it() -> None:
    with pytest.raises(ParamError, match=r"lane_resources\.cpus=2"):
        options.take_settings({"lane_resources": "cpus=2"})


def test_exec_refuses_lane_resources_without_a_cluster(source_tree: Path, tmp_path: Path) -> None:
    a = actor(tmp_path, "a.sh", REPORT_OK)
    out = cli(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"exec:{a}",
        "-a",
        f"exec:{a}",
        "-p",
        "budget.turns=2,lane_resources.cpus=2",
        "x",
        cwd=source_tree,
    )
    assert out.returncode == 2
    assert "use them with --executor ray" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not Path(os.environ["FLAMECHASE_HOME"]).exists()


@pytest.mark.ray
def test_exec_refuses_a_cluster_that_does_not_answer(source_tree: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="needs flamechase[ray]")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    a = actor(tmp_path, "a.sh", REPORT_OK)
    out = cli(
        "exec",
        "-f",
        "flame_chase",
        "--executor",
        f"ray=127.0.0.1:{port}",
        "-a",
        f"exec:{a}",
        "-a",
        f"exec:{a}",
        "-p",
        "budget.turns=2",
        "x",
        cwd=source_tree,
        env={"RAY_USAGE_STATS_ENABLED": "0"},
    )
    assert out.returncode == 2, out.stderr
    assert f"nothing answers at 127.0.0.1:{port}" in out.stderr
    assert not (Path(os.environ["FLAMECHASE_HOME"]) / "runs").exists()


def test_exec_without_ray_installed_says_how_to_get_it(source_tree: Path, tmp_path: Path) -> None:
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("Ray is installed here: the refusal cannot happen")
    a = actor(tmp_path, "a.sh", REPORT_OK)
    out = cli(
        "exec",
        "-f",
        "flame_chase",
        "--executor",
        "ray",
        "-a",
        f"exec:{a}",
        "-a",
        f"exec:{a}",
        "-p",
        "budget.turns=2",
        "x",
        cwd=source_tree,
    )
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()
    assert "pip install 'flamechase[ray]'" in line
    assert not (Path(os.environ["FLAMECHASE_HOME"]) / "runs").exists()
