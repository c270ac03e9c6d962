"""The engine, the views, the CLI and the backends know flows only through the public flow API
and events.

No module of `engine/`, `view/`, `cli/` or `agents/` may name a role or a flow-specific param
of a built-in flow (a param that is not one of `FlowParams`/`CopyParams`, which every flow or
every copying flow shares); no module of `agents/` names a built-in flow or one of its event
kinds either (a flow's simulated actor lives in its own package); and every built-in event
kind shows itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from flamechase import events
from flamechase.events.present import TAGS
from flamechase.flow import CopyParams, FlowParams
from flamechase.flows import builtin_names, load_flow
from flamechase.view import state

SRC = Path(__file__).resolve().parents[1] / "src" / "flamechase"
GENERIC = ("engine", "view", "cli", "agents")
# Layers that name no built-in flow and none of its event kinds, not even in a docstring.
UNNAMED = ("agents",)


def _flow_words() -> tuple[set[str], set[str]]:
    roles: set[str] = set()
    params: set[str] = set()
    shared = set(FlowParams.model_fields) | set(CopyParams.model_fields)
    for name in builtin_names():
        flow = load_flow(name)
        # model_construct: a flow may require a param (an evaluator) with no default.
        defaults = flow.Params.model_construct()
        roles |= set(flow.roles(defaults))
        params |= set(flow.Params.model_fields) - shared
    return roles, params


def _reads_param(node: ast.AST, params: set[str]) -> bool:
    """`params.X`, `getattr(p, "X")`, `params["X"]` or `params.get("X")`, X in `params`."""

    def on_params(value: ast.AST) -> bool:
        return "param" in ast.unparse(value).lower()

    def named(arg: ast.AST) -> bool:
        return isinstance(arg, ast.Constant) and arg.value in params

    if isinstance(node, ast.Attribute):
        return node.attr in params and on_params(node.value)
    if isinstance(node, ast.Subscript):
        return named(node.slice) and on_params(node.value)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("getattr", "hasattr"):
        return len(node.args) >= 2 and named(node.args[1])
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "get"
        and bool(node.args)
        and named(node.args[0])
        and on_params(func.value)
    )


def _names_in(path: Path, params: set[str]) -> list[str]:
    return [
        ast.unparse(node)
        for node in ast.walk(ast.parse(path.read_text()))
        if _reads_param(node, params)
    ]


def _strings(path: Path) -> list[tuple[int, set[str]]]:
    """(line, words) of every string constant in `path`, docstrings included."""
    return [
        (node.lineno, set(re.findall(r"[A-Za-z_0-9]+", node.value)))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_no_generic_module_names_a_builtin_flows_roles_or_params() -> None:
    roles, params = _flow_words()
    assert {"coordinator", "first_chaser", "lane_1_actor_a"} <= roles
    assert {"lanes", "evaluator", "metric_pattern", "direction"} <= params
    role_like = re.compile(r"lane_\d+_actor_[ab]")
    bad = []
    for layer in GENERIC:
        for path in sorted((SRC / layer).rglob("*.py")):
            rel = path.relative_to(SRC)
            for line, words in _strings(path):
                named = sorted((words & roles) | {w for w in words if role_like.fullmatch(w)})
                if named:
                    bad.append(f"{rel}:{line} names role(s) {named}")
            bad += [f"{rel} reads param {x}" for x in _names_in(path, params)]
    assert not bad, "\n".join(bad)


def test_no_backend_module_names_a_builtin_flow_or_its_event_kinds() -> None:
    names: set[str] = set()
    for name in builtin_names():
        names |= set(re.findall(r"[A-Za-z_0-9]+", name))
        load_flow(name)  # its kinds register with it
    kinds = {k for k, cls in events.REGISTRY.items() if issubclass(cls, events.FlowEvent)}
    assert {"parrallello", "git_pr", "flame_chase", "parallel_flame_chase"} <= names
    assert {"front_started", "pr_opened", "planning_started"} <= kinds
    bad = []
    for layer in UNNAMED:
        for path in sorted((SRC / layer).rglob("*.py")):
            rel = path.relative_to(SRC)
            for line, words in _strings(path):
                named = sorted(words & (names | kinds))
                if named:
                    bad.append(f"{rel}:{line} names {named}")
            # A module named for a flow, too.
            module_words = set(re.findall(r"[A-Za-z_0-9]+", path.stem))
            if module_words & (names | kinds):
                bad.append(f"{rel} is named for {sorted(module_words & (names | kinds))}")
    assert not bad, "\n".join(bad)


def test_every_builtin_event_kind_shows_itself_in_one_line() -> None:
    for name in builtin_names():
        load_flow(name)  # a flow's kinds register with the flow
    fold = state.RunFold(lanes=[("lane-1", ("a", "b"))])
    for kind, cls in events.REGISTRY.items():
        line = cls().describe()
        assert isinstance(line, str) and "\n" not in line, kind
        shown = cls(lane="lane-1", actor="a").show(fold)
        assert shown.text and "\n" not in shown.text, kind
        assert shown.tag in TAGS, kind


def test_events_round_trip_through_their_stored_rows() -> None:
    for cls in events.REGISTRY.values():
        event = cls(lane="lane-1", actor="a", seq=7, at="2026-01-01T00:00:00.000Z")
        assert events.parse(event.row()) == event
