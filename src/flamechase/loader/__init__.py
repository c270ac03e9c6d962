"""The loader: what `-f REF` names, the flow it loads, and where that flow's code came from.

`-f` takes a built-in name (the registry in `flamechase.flows`), `NAME:VARIANT`, a path,
`package.module:FLOW`, an installed flow or entry point, or `git+URL[@REV][#SUBDIR][:FLOW]`
(`resolve` says how each is found; `gitsource`, `pinned`, `index` and `installed` fetch, pin,
list and install flows from git and indexes, `official` and `indexes` the shipped index and
indexes by name; `modules` imports a flow's code). `flow_identity`
names a loaded flow's source and hashes its code (`identity`), so a resume can refuse to run
other code than the run's own. Loading a flow runs its code. Must not import the engine.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flamechase.flows import BUILTIN, VARIANTS, builtin_names, variant_names

if TYPE_CHECKING:
    from flamechase.flow import Flow

__all__ = [
    "builtin_names",
    "flow_identity",
    "load_flow",
    "load_recorded",
    "recorded_code",
    "variant_names",
]

# Where each loaded flow came from and the hash of the code it was imported from, for
# flow_identity (hashed at load: the files may change on disk while the flow runs). A flow
# object is a module-level singleton; a weak key lets a reloaded module's old flow go.
_SOURCES: weakref.WeakKeyDictionary[Flow[Any], tuple[str, str]] = weakref.WeakKeyDictionary()


def load_flow(ref: str, *, refresh: bool = False) -> Flow[Any]:
    """The flow `ref` names (FlowNotFound, one line, if none). `refresh` trusts a git tag
    that moved since it was pinned."""
    from flamechase.loader.identity import code_hash
    from flamechase.loader.resolve import resolve

    loaded = resolve(ref, builtin=BUILTIN, variants=VARIANTS, refresh=refresh)
    _SOURCES[loaded.flow] = (loaded.source, code_hash(loaded.flow))
    return loaded.flow


def flow_identity(flow: Flow[Any], ref: str) -> tuple[str, str]:
    """(source, code hash) of a loaded flow: where it came from (a git flow names its commit:
    `git+URL@<commit>#SUBDIR:FLOW`), and a SHA-256 over its code, so a resume can tell
    whether it would run the same flow code."""
    from flamechase.loader.identity import code_hash

    known = _SOURCES.get(flow)
    if known is not None:
        return known
    # A flow that did not come through load_flow.
    source = (
        f"builtin:{ref}"
        if ref in BUILTIN or ref in VARIANTS
        else f"path:{Path(ref).expanduser().resolve()}"
    )
    return source, code_hash(flow)


def _recorded_ref(source: str) -> str | None:
    """The `-f` that loads a recorded `source` with no network (a built-in, a module, a
    path); None for any other."""
    kind, _, rest = source.partition(":")
    ref = {"builtin": rest, "module": rest, "path": rest}.get(kind)
    if kind == "module" and rest.endswith(":FLOW"):
        ref = rest.removesuffix(":FLOW")
    return ref or None


def load_recorded(source: str) -> bool:
    """Import the flow a run recorded as its `source`, so that the views know its event kinds
    and show them in the flow's words; False when it cannot be found here (its kinds are
    then shown plainly). Only what needs no network: a built-in, a module, a path."""
    from flamechase.loader.resolve import resolve

    ref = _recorded_ref(source)
    if ref is None:
        return False
    # Imported only, not hashed: a view needs the flow's kinds, not its identity (a run that
    # is resumed hashes its flow through load_flow).
    try:
        resolve(ref, builtin=BUILTIN, variants=VARIANTS, refresh=False)
    except (Exception, SystemExit):  # a view never fails for want of its flow's code
        return False
    return True


def recorded_code(source: str) -> str:
    """The code hash of the flow a run recorded as its `source`, as it would be imported here
    now ("" when it cannot be: then nothing of it is drawn in its words either)."""
    from flamechase.loader.identity import code_hash
    from flamechase.loader.resolve import resolve

    ref = _recorded_ref(source)
    if ref is None:
        return ""
    try:
        return code_hash(resolve(ref, builtin=BUILTIN, variants=VARIANTS, refresh=False).flow)
    except (Exception, SystemExit):
        return ""
