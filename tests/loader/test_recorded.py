"""A view imports a stored run's flow for its kinds' words, without hashing its code."""

from __future__ import annotations

import pytest

from flamechase.loader import identity, load_recorded


def test_a_views_flow_is_imported_without_hashing_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(flow: object) -> str:
        raise AssertionError("a view hashed its flow's code")

    monkeypatch.setattr(identity, "code_hash", refuse)
    assert load_recorded("builtin:parallel_flame_chase")
    assert not load_recorded("builtin:no_such_flow")
