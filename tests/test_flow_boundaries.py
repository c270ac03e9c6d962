"""The shared rooms know flows only through the public flow API and events.

No module of `engine/`, `events/`, `view/`, `cli/` or `agents/` may name a built-in flow, one
of its roles, one of its event kinds, or read a flow-specific param of one (a param that is
not one of `FlowParams`/`CopyParams`, which every flow or every copying flow shares): not in
code, not in a string (a help text, a docstring, the replay's script), not in a comment. A
flow's words live in its package under `flows/` (a flow's simulated actor too). Every event
kind shows itself in one line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from flamechase import events
from flamechase.events.present import TAGS
from flamechase.flow import CopyParams, FlowParams
from flamechase.flows import builtin_names
from flamechase.loader import load_flow
from flamechase.view import state

SRC = Path(__file__).resolve().parents[1] / "src" / "flamechase"
GENERIC = ("engine", "events", "view", "cli", "agents")
_WORD = re.compile(r"[A-Za-z_0-9]+")


def _flow_vocabulary() -> tuple[set[str], set[str]]:
    """(the built-in flows' names, their event kinds): kinds registered by the flows' own
    modules, not by the engine's (`flamechase.events.*`)."""
    names: set[str] = set()
    for ref in builtin_names():
        flow = load_flow(ref)
        names |= {ref, flow.name, *ref.split(":"), *flow.name.split(":")}
    kinds = {
        kind
        for kind, cls in events.REGISTRY.items()
        if not cls.__module__.startswith("flamechase.events.")
    }
    return names, kinds


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


def _said(path: Path) -> list[tuple[int, str, str]]:
    """(line, what, text) of every string constant, comment and name in `path`."""
    text = path.read_text()
    out: list[tuple[int, str, str]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, "string", node.value))
        elif isinstance(node, ast.Name):
            out.append((node.lineno, "name", node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, "name", node.attr))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.alias):
            out.append((getattr(node, "lineno", 0), "name", node.name))
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.lineno, "name", node.module))
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], "comment", tok.string))
    return out


def test_no_shared_room_names_a_builtin_flow_or_one_of_its_event_kinds() -> None:
    names, kinds = _flow_vocabulary()
    roles, _ = _flow_words()
    assert {"parallel_flame_chase", "git_pr", "parrallello", "flame_chase"} <= names
    assert {"pr_merged", "gate_ran", "candidate_submitted", "planned"} <= kinds
    bad = []
    for layer in GENERIC:
        for path in sorted((SRC / layer).rglob("*.py")):
            rel = path.relative_to(SRC)
            for line, what, text in _said(path):
                # Kinds are words of English too (`planned`): a variable may be called so.
                vocabulary = names if what == "name" else names | kinds | roles
                hit = set(_WORD.findall(text)) & vocabulary
                if hit:
                    bad.append(f"{rel}:{line} {what} names {sorted(hit)}")
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
