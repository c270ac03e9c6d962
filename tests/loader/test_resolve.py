"""How `-f` is read, where it is not covered by the loaders' own tests."""

from __future__ import annotations

from flamechase.loader import gitsource, resolve


def test_a_git_ref_is_told_by_gitsources_own_prefix() -> None:
    # resolve keeps the prefix itself so that a flow that is not git's loads without git's
    # machinery: the two must not drift apart.
    assert resolve.GIT_PREFIX == gitsource.PREFIX
