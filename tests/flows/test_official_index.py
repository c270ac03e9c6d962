"""The official index is the built-in flows' releases, generated from their code: the bundled
file is what the code makes now (`python -m flamechase.loader.official --write` if not)."""

from __future__ import annotations

import json
from importlib import resources

from flamechase.flows import BUILTIN, VARIANTS
from flamechase.loader import official


def test_the_bundled_official_index_is_the_one_the_code_makes() -> None:
    bundled = json.loads(resources.files("flamechase.loader").joinpath(official.FILE).read_text())
    assert bundled == official.generate(), (
        "src/flamechase/loader/official.json is stale: run "
        "`python -m flamechase.loader.official --write` and commit it"
    )


def test_it_lists_every_built_in_flow_with_its_variants() -> None:
    releases = {r.name: r for r in official.releases()}
    assert set(releases) == set(BUILTIN)
    assert {v.name for r in releases.values() for v in r.variants} == set(VARIANTS)
    pfc = releases["parallel_flame_chase"]
    assert [v.name for v in pfc.variants] == ["parallel_flame_chase:git_pr"]
    assert len(pfc.code_hash) == 64
