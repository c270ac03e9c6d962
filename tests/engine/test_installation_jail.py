"""flamechase's own installation is never writable by a turn, even inside the tree lane 1
writes: every runtime program imports from it (`python -I` keeps site-packages)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flamechase.engine import confinement, prepare
from flamechase.errors import SandboxUnavailable
from flamechase.jail import JailSpec, wrap
from tests.jail.conftest import needs_bwrap


@needs_bwrap
def test_an_installation_inside_the_place_is_read_only_in_the_jail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "tree"
    site = tree / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(confinement, "installation", lambda: (site.resolve(),))
    assert confinement.installation_inside(tree) == (site.resolve(),)
    spec = JailSpec(
        mode="bwrap",
        place=tree,
        tmp=tmp_path / "tmp",
        protected=confinement.installation_inside(tree),
    )
    (tmp_path / "tmp").mkdir()
    script = (
        "import pathlib, sys\n"
        "open(sys.argv[1] + '/ok.txt', 'w').write('ok')\n"
        "try:\n"
        "    open(sys.argv[2] + '/evil.pth', 'w').write('import os')\n"
        "    print('WROTE')\n"
        "except OSError:\n"
        "    print('REFUSED')\n"
    )
    out = subprocess.run(
        wrap([sys.executable, "-I", "-c", script, str(tree), str(site)], spec),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "REFUSED"
    assert (tree / "ok.txt").read_text() == "ok"
    assert not (site / "evil.pth").exists()


def test_an_installation_outside_every_place_is_not_protected(tmp_path: Path) -> None:
    assert confinement.installation_inside(tmp_path) == ()


def test_landlock_cannot_keep_agents_out_so_the_run_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = tmp_path / ".venv"
    venv.mkdir()
    monkeypatch.setattr(confinement, "installation", lambda: (venv.resolve(),))
    with pytest.raises(SandboxUnavailable, match="install flamechase outside the tree"):
        prepare._installation_outside(tmp_path, "landlock")
    prepare._installation_outside(tmp_path, "bwrap")  # re-bound read-only instead
