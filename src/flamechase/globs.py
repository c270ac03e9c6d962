"""File globs for flows that give agents files of their own: matching and overlap, as values.

A glob names paths relative to a tree's root (POSIX separators, anchored at the root):

    src/solver/**      everything under src/solver
    src/*.py           .py files directly in src
    **/test_*.py       test_*.py at any depth
    solver.py          the file solver.py, or everything under a directory of that name
    docs/              everything under docs (a trailing slash means `docs/**`)

`*` and `?` never cross a `/`; `**` as a whole segment crosses any number of them; `[a-z]`
and `[!a-z]` are one character. A glob without wildcards names a path and everything under
it, as a git pathspec does.

`overlap(a, b)` decides whether some path matches both globs and, if so, returns the shortest
such path (a "sample path" for an error message): two writers must never own the same file,
including files that do not exist yet, so ownership is checked on the globs themselves, not
on the files of one tree. Both globs become small automata over characters; their product is
searched breadth-first. Matching a path uses a regular expression built from the same atoms.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import re
from collections.abc import Iterable, Sequence

__all__ = ["Glob", "GlobError", "any_match", "matches", "overlap", "parse"]


class GlobError(ValueError):
    """A glob that cannot name paths in a tree (empty, `..`, an unclosed `[`)."""


# ---- atoms -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Chars:
    """One character: a literal, any but `/`, a class, or anything at all."""

    literal: str | None = None
    ranges: tuple[tuple[str, str], ...] = ()
    negated: bool = False
    slash: bool = False  # also `/` (only inside `**`)
    any: bool = False  # any character but `/` (with `slash`: any character)

    def has(self, c: str) -> bool:
        if self.literal is not None:
            return c == self.literal
        if c == "/":
            return self.slash
        if self.any:
            return True
        inside = any(lo <= c <= hi for lo, hi in self.ranges)
        return inside != self.negated

    def regex(self) -> str:
        if self.literal is not None:
            return re.escape(self.literal)
        if self.any:
            return "." if self.slash else "[^/]"
        body = "".join(
            re.escape(lo) if lo == hi else f"{re.escape(lo)}-{re.escape(hi)}"
            for lo, hi in self.ranges
        )
        return f"[^/{body}]" if self.negated else f"(?:(?!/)[{body}])"


ANY = _Chars(any=True)
ANY_OR_SLASH = _Chars(any=True, slash=True)
SLASH = _Chars(literal="/")


@dataclasses.dataclass(frozen=True, slots=True)
class _Atom:
    kind: str  # "one" (a character), "star" (zero or more), "dirs" (empty or ".../")
    chars: _Chars = ANY


@dataclasses.dataclass(frozen=True, slots=True)
class Glob:
    """A parsed glob: its text and its atoms (what both the matcher and `overlap` use)."""

    text: str
    atoms: tuple[_Atom, ...]
    prefix: bool  # no wildcard: also matches everything under the path

    def __str__(self) -> str:
        return self.text


def _class(seg: str, i: int, text: str) -> tuple[_Chars, int]:
    """The class starting at seg[i] == '[', and the index after it."""
    j = i + 1
    negated = j < len(seg) and seg[j] in "!^"
    if negated:
        j += 1
    ranges: list[tuple[str, str]] = []
    first = True
    while j < len(seg) and (seg[j] != "]" or first):
        first = False
        lo = seg[j]
        if j + 2 < len(seg) and seg[j + 1] == "-" and seg[j + 2] != "]":
            ranges.append((lo, seg[j + 2]))
            j += 3
        else:
            ranges.append((lo, lo))
            j += 1
    if j >= len(seg):
        raise GlobError(f"glob {text!r} has an unclosed '['")
    return _Chars(ranges=tuple(ranges), negated=negated), j + 1


def _segment(seg: str, text: str) -> list[_Atom]:
    atoms: list[_Atom] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            while i < len(seg) and seg[i] == "*":
                i += 1
            atoms.append(_Atom("star"))
            continue
        if c == "?":
            atoms.append(_Atom("one"))
        elif c == "[":
            chars, i = _class(seg, i, text)
            atoms.append(_Atom("one", chars))
            continue
        else:
            atoms.append(_Atom("one", _Chars(literal=c)))
        i += 1
    return atoms


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> Glob:
    """The glob `text` names, or GlobError saying why it names nothing."""
    raw = text.strip()
    body = raw.lstrip("/")
    while body.startswith("./"):
        body = body[2:]
    if body.endswith("/"):
        body = body.rstrip("/") + "/**"
    segs = [s for s in body.split("/") if s not in ("", ".")]
    if not segs:
        raise GlobError(f"glob {text!r} names no path")
    if ".." in segs:
        raise GlobError(f"glob {text!r} climbs out of the tree ('..')")
    atoms: list[_Atom] = []
    for n, seg in enumerate(segs):
        last = n == len(segs) - 1
        if seg == "**":
            if last:  # everything under what came before (or everything at all)
                atoms += [_Atom("one", ANY_OR_SLASH), _Atom("star", ANY_OR_SLASH)]
            else:
                atoms.append(_Atom("dirs"))
            continue
        atoms += _segment(seg, text)
        if not last:
            atoms.append(_Atom("one", SLASH))
    wild = any(ch in body for ch in "*?[")
    return Glob("/".join(segs), tuple(atoms), prefix=not wild)


# ---- matching ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _regex(glob: Glob) -> re.Pattern[str]:
    parts = []
    for a in glob.atoms:
        if a.kind == "one":
            parts.append(a.chars.regex())
        elif a.kind == "star":
            parts.append(f"(?:{a.chars.regex()})*")
        else:
            parts.append("(?:.*/)?")
    if glob.prefix:
        parts.append("(?:/.+)?")
    return re.compile("".join(parts), re.DOTALL)


def matches(glob: Glob | str, path: str) -> bool:
    """Whether the relative POSIX `path` is named by `glob`."""
    g = parse(glob) if isinstance(glob, str) else glob
    return _regex(g).fullmatch(path) is not None


def any_match(globs: Iterable[Glob | str], path: str) -> bool:
    return any(matches(g, path) for g in globs)


# ---- overlap -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Nfa:
    """States 0..n; `edges[s]`: (chars or None for an empty move, target); `accept`."""

    edges: tuple[tuple[tuple[_Chars | None, int], ...], ...]
    accept: frozenset[int]


@functools.lru_cache(maxsize=4096)
def _nfa(glob: Glob) -> _Nfa:
    edges: list[list[tuple[_Chars | None, int]]] = []

    def state() -> int:
        edges.append([])
        return len(edges) - 1

    cur = state()
    for a in glob.atoms:
        nxt = state()
        if a.kind == "one":
            edges[cur].append((a.chars, nxt))
        elif a.kind == "star":
            edges[cur] += [(a.chars, cur), (None, nxt)]
        else:  # "dirs": nothing, or anything ending in '/'
            loop = state()
            edges[cur] += [(None, nxt), (None, loop)]
            edges[loop] += [(ANY_OR_SLASH, loop), (SLASH, nxt)]
        cur = nxt
    accept = {cur}
    if glob.prefix:  # and everything under the path
        slash, more = state(), state()
        edges[cur].append((SLASH, slash))
        edges[slash].append((ANY_OR_SLASH, more))
        edges[more].append((ANY_OR_SLASH, more))
        accept.add(more)
    return _Nfa(tuple(tuple(e) for e in edges), frozenset(accept))


def _closure(nfa: _Nfa, s: int) -> set[int]:
    seen, todo = {s}, [s]
    while todo:
        for chars, t in nfa.edges[todo.pop()]:
            if chars is None and t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def _witnesses(globs: Sequence[Glob]) -> list[str]:
    """Characters worth trying on a move both automata can make: every literal the globs
    spell, class bounds, and a few ordinary ones."""
    found = dict.fromkeys("a/x0_-.Z")
    for g in globs:
        for a in g.atoms:
            if a.chars.literal is not None:
                found[a.chars.literal] = None
            for lo, hi in a.chars.ranges:
                found[lo] = found[hi] = None
                found[chr(ord(lo) + 1) if lo < hi else lo] = None
    return list(found)


def overlap(a: Glob | str, b: Glob | str, *, limit: int = 20000) -> str | None:
    """A shortest path both globs name, or None when no path does."""
    ga = parse(a) if isinstance(a, str) else a
    gb = parse(b) if isinstance(b, str) else b
    na, nb = _nfa(ga), _nfa(gb)
    chars = _witnesses((ga, gb))
    start = (frozenset(_closure(na, 0)), frozenset(_closure(nb, 0)))
    seen = {start}
    queue = collections.deque([(start, "")])
    while queue and len(seen) < limit:
        (sa, sb), path = queue.popleft()
        if sa & na.accept and sb & nb.accept and path and not path.endswith("/"):
            return path
        for c in chars:
            if c == "/" and (not path or path.endswith("/")):
                continue  # a real path: no leading or doubled separator
            ta = _step(na, sa, c)
            tb = _step(nb, sb, c) if ta else frozenset()
            if ta and tb and (ta, tb) not in seen:
                seen.add((ta, tb))
                queue.append(((ta, tb), path + c))
    return None


def _step(nfa: _Nfa, states: frozenset[int], c: str) -> frozenset[int]:
    out: set[int] = set()
    for s in states:
        for chars, t in nfa.edges[s]:
            if chars is not None and chars.has(c):
                out |= _closure(nfa, t)
    return frozenset(out)
