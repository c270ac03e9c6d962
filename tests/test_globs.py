"""Ownership globs: what they name, and whether two of them can name the same file."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flamechase.globs import GlobError, matches, overlap, parse


@pytest.mark.parametrize(
    ("glob", "path", "named"),
    [
        ("src/**", "src/a/b.py", True),
        ("src/**", "src", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/sub/a.py", False),
        ("**/test_*.py", "test_x.py", True),
        ("**/test_*.py", "a/b/test_x.py", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("solver.py", "solver.py", True),
        ("solver.py", "lib/solver.py", False),  # anchored at the root
        ("docs", "docs/guide/index.md", True),  # no wildcard: the path and what is under it
        ("docs/", "docs/a", True),
        ("[!a]x.py", "bx.py", True),
        ("[!a]x.py", "ax.py", False),
        ("f?.c", "f1.c", True),
        ("f?.c", "f/.c", False),
    ],
)
def test_a_glob_names_paths_from_the_root(glob: str, path: str, named: bool) -> None:
    assert matches(glob, path) is named


@pytest.mark.parametrize("bad", ["", "/", "../x", "a/../b", "src/[ab"])
def test_a_glob_that_names_nothing_is_refused(bad: str) -> None:
    with pytest.raises(GlobError):
        parse(bad)


@pytest.mark.parametrize(
    ("a", "b", "sample"),
    [
        ("src/**", "**/*.py", "src/.py"),
        ("src/a.py", "src/*.py", "src/a.py"),
        ("a/*/c", "a/b/*", "a/b/c"),
        ("gates/p1.py", "gates/**", "gates/p1.py"),
        ("pkg", "pkg/mod.py", "pkg/mod.py"),
    ],
)
def test_overlapping_globs_give_a_sample_path_both_name(a: str, b: str, sample: str) -> None:
    assert overlap(a, b) == sample
    assert matches(a, sample) and matches(b, sample)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("src/*.py", "tests/*.py"),
        ("docs/", "README.md"),
        ("[!a]x", "ax"),
        ("src/*.py", "src/sub/x.py"),
        ("app/core.py", "app/core.pyc"),
    ],
)
def test_disjoint_globs_have_no_common_path(a: str, b: str) -> None:
    assert overlap(a, b) is None


_PART = st.sampled_from(["src", "a", "b", "*", "**", "x.py", "*.py", "t_?", "[ab]*"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PART, min_size=1, max_size=4), st.lists(_PART, min_size=1, max_size=4))
def test_a_sample_path_is_always_named_by_both_globs(a: list[str], b: list[str]) -> None:
    ga, gb = "/".join(a), "/".join(b)
    sample = overlap(ga, gb)
    if sample is not None:
        assert matches(ga, sample) and matches(gb, sample), (ga, gb, sample)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_PART, min_size=1, max_size=4),
    st.lists(st.sampled_from(["src", "a", "b", "x.py", "t_1", "ab.py"]), min_size=1, max_size=4),
)
def test_a_glob_overlaps_every_path_it_names(a: list[str], path: list[str]) -> None:
    glob, p = "/".join(a), "/".join(path)
    if matches(glob, p):
        assert overlap(glob, p) is not None
