"""`--executor local|ray[=ADDRESS]` and the `lane_resources.*` settings that go with it.

Why `lane_resources.*` is an executor setting the CLI takes out of `-p`/`-c` rather than a
flow param: where turns run is a property of one invocation, not of the run (a run started
on a cluster may be resumed on a laptop, with `--executor local`), so it is neither stored
with the run's params nor validated against a flow's model; every flow takes it because no
flow ever sees it. The dotted keys follow `budget.*`, and in YAML read as a mapping:

    -p lane_resources.cpus=4,lane_resources.memory=8G,lane_resources.GPU=1
    lane_resources: {cpus: 4, memory: 8G, GPU: 1}          # in -c CONFIG.yaml
    -p ray.placement_timeout=900     # how long a lane waits for a node (an autoscaler's)
    -p ray.lane_1=node               # lane 1 too, backed by git (engine/remote/gitsync.py)
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Literal

from flamechase.errors import ExecutorUnavailable, ParamError, UsageError

if TYPE_CHECKING:
    from flamechase.engine.executor import Executor
    from flamechase.engine.prepare import Prepared

PREFIX = "lane_resources"
WAIT = "ray.placement_timeout"  # seconds a lane waits for a node that can take it
DEFAULT_WAIT = 300.0
LANE_1 = "ray.lane_1"  # head (default) or node: where the lane in the user's tree runs
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_:\-]{0,63}$")


@dataclasses.dataclass(frozen=True, slots=True)
class LaneResources:
    """What each lane's host asks the cluster for (Ray's logical resources)."""

    cpus: float = 1.0
    memory: int | None = None  # bytes
    gpus: float = 0.0
    custom: tuple[tuple[str, float], ...] = ()

    def ray_options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"num_cpus": self.cpus}
        if self.memory is not None:
            opts["memory"] = self.memory
        if self.gpus:
            opts["num_gpus"] = self.gpus
        if self.custom:
            opts["resources"] = dict(self.custom)
        return opts

    def describe(self) -> str:
        parts = [f"CPU {self.cpus:g}"]
        if self.memory is not None:
            parts.append(f"memory {self.memory} B")
        if self.gpus:
            parts.append(f"GPU {self.gpus:g}")
        parts += [f"{k} {v:g}" for k, v in self.custom]
        return ", ".join(parts)


@dataclasses.dataclass(frozen=True, slots=True)
class ExecutorChoice:
    kind: Literal["local", "ray"] = "local"
    address: str | None = None  # ray: None means RAY_ADDRESS, else the cluster on this machine
    resources: LaneResources = LaneResources()
    placement_timeout: float = DEFAULT_WAIT
    lane_1_on_node: bool = False


def parse_executor(text: str) -> tuple[Literal["local", "ray"], str | None]:
    """`local`, `ray` or `ray=ADDRESS` -> (kind, address); UsageError otherwise."""
    kind, eq, address = text.strip().partition("=")
    if kind == "local" and not eq:
        return "local", None
    if kind == "ray":
        if eq and not address.strip():
            raise UsageError(
                "--executor ray=: give the cluster's address (HOST:PORT, "
                "ray://HOST:PORT) or drop `=`"
            )
        return "ray", address.strip() or None
    raise UsageError(f"--executor {text}: expected local, ray or ray=ADDRESS")


def take_settings(settings: MutableMapping[str, object]) -> dict[str, object]:
    """Remove and return the executor's keys (`lane_resources.*`, `ray.placement_timeout`,
    `ray.lane_1`) from -p/-c settings."""
    taken = {
        k: settings.pop(k)
        for k in list(settings)
        if k in (PREFIX, WAIT, LANE_1) or k.startswith(PREFIX + ".")
    }
    if PREFIX in taken:
        raise ParamError(
            f"-p {PREFIX}={taken[PREFIX]}: give each resource as its own key, "
            f"e.g. -p {PREFIX}.cpus=2,{PREFIX}.memory=4G,{PREFIX}.GPU=1"
        )
    return taken


def choose(text: str, settings: Mapping[str, object]) -> ExecutorChoice:
    """`--executor TEXT` with the executor keys taken from -p/-c."""
    kind, address = parse_executor(text)
    if kind == "local":
        if settings:
            key = next(iter(settings))
            what = (
                "lane resources are asked of a cluster; use them"
                if key.startswith(PREFIX)
                else "a setting of the Ray executor; use it"
            )
            raise ParamError(f"-p {key}: {what} with --executor ray")
        return ExecutorChoice()
    rest = {k: v for k, v in settings.items() if k not in (WAIT, LANE_1)}
    wait = _amount(WAIT, settings[WAIT]) if WAIT in settings else DEFAULT_WAIT
    if wait <= 0:
        raise ParamError(f"-p {WAIT}={settings[WAIT]}: a lane needs some time to be placed")
    where = str(settings.get(LANE_1, "head")).strip().lower()
    if where not in ("head", "node"):
        raise ParamError(
            f"-p {LANE_1}={settings[LANE_1]}: expected head (lane 1 runs on "
            "this machine, in your tree) or node (on the cluster, backed by git)"
        )
    return ExecutorChoice("ray", address, lane_resources(rest), wait, where == "node")


def lane_resources(settings: Mapping[str, object]) -> LaneResources:
    cpus, memory, gpus = 1.0, None, 0.0
    custom: dict[str, float] = {}
    for key, value in settings.items():
        name = key[len(PREFIX) + 1 :]
        if name == "memory":
            memory = _size(key, value)
        elif name in ("cpus", "CPU", "num_cpus"):
            cpus = _amount(key, value)
        elif name in ("gpus", "GPU", "num_gpus"):
            gpus = _amount(key, value)
        elif _NAME.fullmatch(name):
            custom[name] = _amount(key, value)
        else:
            raise ParamError(f"-p {key}: not a resource name (letters, digits, _ : -)")
    return LaneResources(cpus=cpus, memory=memory, gpus=gpus, custom=tuple(sorted(custom.items())))


def _amount(key: str, value: object) -> float:
    try:
        number = float(str(value))
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0 or number > 1_000_000:
        raise ParamError(f"-p {key}={value}: expected a number from 0 to 1000000")
    return number


def _size(key: str, value: object) -> int:
    m = _SIZE.match(str(value))
    if m is None:
        raise ParamError(f"-p {key}={value}: expected a size such as 512M, 4G or 8GiB")
    size = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if size <= 0:
        raise ParamError(f"-p {key}={value}: a lane needs some memory")
    return size


def make_executor(choice: ExecutorChoice, prep: Prepared) -> tuple[Executor | None, Prepared]:
    """The executor `choice` names (None: the engine's own local one), and the prepared run
    with a notice saying where lanes run. Connecting happens here: a cluster that cannot be
    reached is a refusal (ExecutorUnavailable, exit 2) before anything is written."""
    if choice.kind == "local":
        return None, prep
    from flamechase.engine.executor import LocalExecutor
    from flamechase.engine.remote import gitsync

    tree, in_tree = None, list[str]()
    if choice.lane_1_on_node:
        in_tree = [ln.name for ln in prep.flow.lanes(prep.params) if ln.in_source]
        if not in_tree:
            raise ParamError(
                f"-p {LANE_1}=node: no lane of {prep.flow.name} works in your "
                "tree (each has a copy of its own, which goes to the cluster "
                "anyway); drop it"
            )
        why = gitsync.why_not(prep.workspace)
        if why is not None:
            raise ExecutorUnavailable(f"-p {LANE_1}=node: {why}")
        tree = prep.workspace
    try:
        from flamechase.engine.remote import ray_executor
    except ImportError:
        raise ExecutorUnavailable(
            "--executor ray needs Ray on this machine and on every node: pip install "
            "'flamechase[ray]'"
        ) from None
    local = LocalExecutor(prep.backends_by_text())
    address = ray_executor.connect(choice.address)
    if tree is None:
        notice = (
            f"lanes in private copies run on the Ray cluster at {address}, each asking "
            f"for {choice.resources.describe()}; lane 1 and roles outside lanes run here"
        )
    else:
        notice = (
            f"every lane runs on the Ray cluster at {address}, each asking for "
            f"{choice.resources.describe()}; {', '.join(in_tree)} in a git copy of "
            "your tree there, its turns landed here as commits "
            f"(refs/flamechase/RUN/{in_tree[0]}); roles outside lanes run here"
        )
    executor = ray_executor.RayExecutor(
        choice.resources, local, placement_timeout=choice.placement_timeout, tree=tree
    )
    return executor, dataclasses.replace(prep, notices=(*prep.notices, notice))
