"""What `-f REF` names, and the flow it loads, with the source a run records for it.

parallel_flame_chase            a built-in
parallel_flame_chase:git_pr     NAME:VARIANT (built-ins: the VARIANTS table; installed and
                                entry-point flows: another Flow in the same module)
./my_flow.py, ~/flows/review    a .py file or a package directory (anything with a '/',
                                or ending in .py)
package.module:FLOW             an importable module (`:FLOW` defaults to FLOW)
NAME                            a flow installed from an index, or an installed package's
                                entry point in the group `flamechase.flows`
git+URL[@REV][#SUBDIR][:FLOW]   a git repository, pinned (loader/gitsource.py), its code read
                                from the commit's objects (loader/pinned.py)
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flamechase.errors import FlowNotFound
from flamechase.flow import Flow
from flamechase.loader import installed, modules

if TYPE_CHECKING:
    from flamechase.loader import gitsource

# gitsource.PREFIX, without importing git's machinery (and `pinned`'s importers) for the
# flows that are not git's: they are imported by the loads that use them.
GIT_PREFIX = "git+"

ENTRY_POINT_GROUP = "flamechase.flows"
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclasses.dataclass(frozen=True, slots=True)
class Loaded:
    """A flow and where its code came from (what the run records as its flow's source)."""

    flow: Flow[Any]
    source: str


def resolve(
    ref: str, *, builtin: dict[str, str], variants: dict[str, str], refresh: bool = False
) -> Loaded:
    """Load the flow `ref` names (see the module docstring); FlowNotFound, one line, if none."""
    if not ref.strip():
        raise FlowNotFound("-f is empty; give a flow name, a path or git+URL")
    if ref.startswith(GIT_PREFIX):
        from flamechase.loader import gitsource

        return load_git(gitsource.parse(ref), refresh=refresh)
    # An installed flow wins over the built-in of its name: installing one ("install
    # parallel_flame_chase from the flowverse") is asking to run it; `flows install` says so.
    record = installed.get(ref)
    if record is not None:
        return load_installed(record, None)
    if ref in builtin:
        return Loaded(_builtin(builtin[ref], ref), f"builtin:{ref}")
    if ref in variants:
        parent = installed.get(ref.partition(":")[0])
        if parent is not None and ref in parent.variants:
            return load_installed(parent, ref.partition(":")[2])
        return Loaded(_builtin(variants[ref], ref), f"builtin:{ref}")
    name, colon, attr = ref.partition(":")
    if colon and (name in builtin or installed.get(name) or _entry_point(name)):
        return _variant(name, attr, builtin, variants)
    if "/" in ref or ref.endswith(".py") or ref.startswith(("~", ".")):
        return _path(ref)
    if colon:
        if not (_MODULE.fullmatch(name) and _IDENT.fullmatch(attr)):
            raise FlowNotFound(f"-f {ref!r}: expected package.module:FLOW")
        module = modules.import_module(name, ref)
        return Loaded(modules.flow_in(module, attr, ref), f"module:{ref}")
    point = _entry_point(ref)
    if point is not None:
        return _from_entry_point(point, None)
    if Path(ref).exists():
        return _path(ref)
    if "." in ref and _MODULE.fullmatch(ref):
        module = modules.import_module(ref, ref)
        return Loaded(modules.flow_in(module, None, ref), f"module:{ref}:FLOW")
    raise FlowNotFound(_unknown(ref, builtin))


def _unknown(ref: str, builtin: dict[str, str]) -> str:
    names = sorted(
        {*builtin, *(r.name for r in installed.all_installed()), *(p.name for p in entry_points())}
    )
    return (
        f"no flow called {ref!r}; flows here: {', '.join(names)}; or give a path to a .py "
        "file or package, package.module:FLOW, or git+URL[@REV][#SUBDIR][:FLOW]"
    )


def _builtin(module: str, ref: str) -> Flow[Any]:
    return modules.flow_in(importlib.import_module(module), None, ref)


def _variant(name: str, variant: str, builtin: dict[str, str], variants: dict[str, str]) -> Loaded:
    ref = f"{name}:{variant}"
    if name in builtin:
        known = sorted(k for k in variants if k.startswith(name + ":"))
        raise FlowNotFound(
            f"flow {name} has no variant {variant!r}; its variants: " + (", ".join(known) or "none")
        )
    if not _IDENT.fullmatch(variant):
        raise FlowNotFound(f"-f {ref!r}: {variant!r} is not a variant name")
    record = installed.get(name)
    if record is not None:
        return load_installed(record, variant)
    point = _entry_point(name)
    assert point is not None  # resolve() only comes here for a known name
    return _from_entry_point(point, variant)


def _path(ref: str) -> Loaded:
    text, attr = ref, None
    head, colon, tail = ref.rpartition(":")
    if colon and _IDENT.fullmatch(tail) and not Path(ref).expanduser().exists():
        text, attr = head, tail
    path = Path(text).expanduser()
    if not path.exists():
        raise FlowNotFound(
            f"flow path {text} does not exist; give a .py file or a package "
            "directory that defines FLOW, or a flow name"
        )
    path = path.resolve()
    module = modules.import_path(path, text)
    flow = modules.flow_in(module, attr, text)
    return Loaded(flow, f"path:{path}" + (f":{attr}" if attr else ""))


def load_git(ref: gitsource.GitRef, *, refresh: bool = False) -> Loaded:
    from flamechase.loader import gitsource

    checkout, commit = gitsource.resolve(ref, refresh=refresh)
    return Loaded(_from_checkout(checkout, ref, commit), ref.source(commit))


def _from_checkout(checkout: Path, ref: gitsource.GitRef, commit: str) -> Flow[Any]:
    """The flow at `commit`, imported from the commit's own objects (loader/pinned.py)."""
    from flamechase.loader import pinned

    shown = ref.source(commit)
    module = pinned.import_tree(pinned.read(checkout, commit, ref.subdir, shown), shown)
    return modules.flow_in(module, ref.attr, shown)


def load_installed(record: installed.Installed, variant: str | None) -> Loaded:
    """An installed flow, from the checkout of the commit its index recorded (verified), or
    a release of the official index: the built-in code, verified against its recorded hash."""
    from flamechase.loader import official

    if official.is_official(record):
        name = f"{record.name}:{variant}" if variant else record.name
        official.verify(record, name)
        return Loaded(official.builtin(name), f"builtin:{name}")
    from flamechase.loader import gitsource

    ref = gitsource.GitRef(url=record.url, rev=record.commit, subdir=record.subdir, attr=variant)
    checkout = gitsource.checkout(record.url, record.commit)
    return Loaded(_from_checkout(checkout, ref, record.commit), ref.source(record.commit))


def entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name)


def _entry_point(name: str) -> metadata.EntryPoint | None:
    return next((p for p in entry_points() if p.name == name), None)


def _from_entry_point(point: metadata.EntryPoint, variant: str | None) -> Loaded:
    shown = f"entry point {point.name} ({point.value})"
    dist = point.dist
    origin = f"entry-point:{point.name}={point.value}" + (
        f" ({dist.name} {dist.version})" if dist is not None else ""
    )
    try:
        obj = point.load()
    except modules.IMPORT_FAILURES as exc:
        raise FlowNotFound(f"{shown} failed to import: {modules.first_line(exc)}") from exc
    if variant is None:
        return Loaded(modules.as_flow(obj, shown), origin)
    module = importlib.import_module(point.module)
    return Loaded(modules.flow_in(module, variant, f"{shown}:{variant}"), f"{origin}:{variant}")
