"""A flow's code hash follows its modules' imports; what each source imports is parsed once
and kept in the state home, keyed by the source's own bytes, so a start does not parse every
module again and an edited module is never taken for the one that was parsed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.flows.loading_repos import flow_source

# Prints the flow's code hash, then how many sources this process had to parse.
HASH = """
import sys
from flamechase.loader import importcache, flow_identity, load_flow
parsed = []
real = importcache.parse_imports
def counting(source, package):
    parsed.append(package)
    return real(source, package)
importcache.parse_imports = counting
print(flow_identity(load_flow(sys.argv[1]), "")[1], len(parsed))
"""


@pytest.fixture(autouse=True)
def home(state_home: Path) -> Path:
    state_home.mkdir()  # the cache is kept only in a state home that exists
    return state_home


def _hash(ref: str) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", HASH, ref],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    ).stdout.split()
    return out[0], int(out[1])


def test_a_second_start_hashes_a_built_in_flow_without_parsing_it_again(
    state_home: Path,
) -> None:
    first, parsed = _hash("flame_chase")
    assert parsed > 10  # the flow, its package and the public flow library it is written on
    assert (state_home / "cache" / "imports.json").is_file()
    assert _hash("flame_chase") == (first, 0)


def _package(parent: Path, helper: str) -> Path:
    pkg = parent / "relay"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(flow_source() + "\nfrom . import words  # noqa: E402\n")
    (pkg / "words.py").write_text(helper)
    return pkg


def test_an_edited_module_is_parsed_again_and_changes_the_hash(tmp_path: Path) -> None:
    pkg = _package(tmp_path, "PROMPT = 'first'\n")
    before, _ = _hash(str(pkg))
    (pkg / "words.py").write_text("PROMPT = 'other'\n")
    after, parsed = _hash(str(pkg))
    assert after != before
    assert parsed == 1
    (pkg / "words.py").write_text("PROMPT = 'first'\n")
    assert _hash(str(pkg)) == (before, 0)


def test_a_lying_entry_is_never_used_for_other_bytes(tmp_path: Path, state_home: Path) -> None:
    """Entries are found by the SHA-256 of the bytes parsed: an entry saying a module imports
    nothing is never used for a module whose bytes differ from the ones it was made from."""
    pkg = _package(tmp_path, "PROMPT = 'first'\n")
    _hash(str(pkg))
    cache = state_home / "cache" / "imports.json"
    kept = json.loads(cache.read_text())
    cache.write_text(json.dumps({k: [] for k in kept}))  # every entry now lies
    with (pkg / "__init__.py").open("a") as f:
        f.write("# edited\n")
    edited, parsed = _hash(str(pkg))
    assert parsed == 1
    cache.unlink()
    assert _hash(str(pkg))[0] == edited


def test_a_cache_file_that_is_not_json_is_parsed_past(tmp_path: Path, state_home: Path) -> None:
    pkg = _package(tmp_path, "PROMPT = 'first'\n")
    honest, _ = _hash(str(pkg))
    (state_home / "cache" / "imports.json").write_bytes(b"\x00not json")
    assert _hash(str(pkg))[0] == honest


def test_no_state_home_is_made_for_the_cache(tmp_path: Path, home: Path) -> None:
    home.rmdir()
    _hash("flame_chase")
    assert not home.exists()
