"""treesync: a writer's copy compared with the front's tree, file by file, and taken back only
where the writer owns the file. Real trees, real git, the real program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flamechase.tools import treesync


def tool(cwd: Path, *args: str) -> tuple[int, dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-m", "flamechase.tools.treesync", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("TREESYNC ")
    return proc.returncode, json.loads(line.removeprefix("TREESYNC "))


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    base = tmp_path / "front"
    (base / "src").mkdir(parents=True)
    (base / "gates").mkdir()
    (base / "src" / "a.py").write_text("A = 1\n")
    (base / "src" / "keep.py").write_text("K = 1\n")
    (base / "gates" / "g.py").write_text("print('gate')\n")
    (base / "notes.md").write_text("notes\n")
    subprocess.run(["git", "init", "-q"], cwd=base, check=True)
    (base / ".gitignore").write_text("*.log\n")
    copy = tmp_path / "copy"
    copy.mkdir()
    code, out = tool(copy, "mirror", "--from", str(base))
    assert code == 0 and out["changed"] > 0
    return base, copy


def test_a_mirror_is_an_exact_copy_git_and_modes_included(trees: tuple[Path, Path]) -> None:
    base, copy = trees
    assert treesync.changes(base, copy, with_git=True) == []
    (copy / "src" / "a.py").write_text("A = 2\n")
    (copy / "stray.txt").write_text("x")
    os.chmod(copy / "notes.md", 0o755)
    code, out = tool(copy, "mirror", "--from", str(base))
    assert code == 0 and out["changed"] == 3
    assert treesync.changes(base, copy, with_git=True) == []


def test_an_edit_keeping_size_and_time_is_still_seen(trees: tuple[Path, Path]) -> None:
    base, copy = trees
    target = copy / "src" / "a.py"
    st = target.stat()
    target.write_text("A = 9\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert treesync.changes(base, copy) == ["src/a.py"]


def test_changes_are_sorted_into_accepted_outside_and_frozen(trees: tuple[Path, Path]) -> None:
    base, copy = trees
    (copy / "src" / "a.py").write_text("A = 2\n")
    (copy / "src" / "new.py").write_text("N = 1\n")
    (copy / "src" / "keep.py").unlink()
    (copy / "notes.md").write_text("mine now\n")
    (copy / "gates" / "g.py").write_text("print('PASS')\n")
    (copy / "debug.log").write_text("ignored by git\n")
    (copy / "src" / "__pycache__").mkdir()
    (copy / "src" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    code, out = tool(base, "diff", "--from", str(copy), "--allow", "src/**", "--frozen", "gates/**")
    assert code == 0
    assert out["accepted"] == {"count": 3, "paths": ["src/a.py", "src/keep.py", "src/new.py"]}
    assert out["outside"] == {"count": 1, "paths": ["notes.md"]}
    assert out["frozen"] == {"count": 1, "paths": ["gates/g.py"]}
    assert out["ignored"] == 2 and out["applied"] is False
    assert (base / "src" / "a.py").read_text() == "A = 1\n"  # a diff changes nothing


def test_apply_takes_only_the_accepted_files(trees: tuple[Path, Path]) -> None:
    base, copy = trees
    (copy / "src" / "a.py").write_text("A = 2\n")
    (copy / "src" / "deep" / "new.py").parent.mkdir()
    (copy / "src" / "deep" / "new.py").write_text("N = 1\n")
    (copy / "src" / "keep.py").unlink()
    (copy / "notes.md").write_text("mine now\n")
    (copy / "gates" / "g.py").write_text("print('PASS')\n")
    code, out = tool(
        base, "apply", "--from", str(copy), "--allow", "src/**", "--frozen", "gates/**"
    )
    assert code == 0 and out["applied"] is True
    assert (base / "src" / "a.py").read_text() == "A = 2\n"
    assert (base / "src" / "deep" / "new.py").read_text() == "N = 1\n"
    assert not (base / "src" / "keep.py").exists()
    assert (base / "notes.md").read_text() == "notes\n"  # outside: reverted by not taking
    assert (base / "gates" / "g.py").read_text() == "print('gate')\n"  # frozen: never taken


def test_hash_fingerprints_the_gate_files(trees: tuple[Path, Path]) -> None:
    base, _ = trees
    code, first = tool(base, "hash", "--globs", "gates/**")
    assert code == 0 and list(first["files"]) == ["gates/g.py"]  # type: ignore[call-overload]
    (base / "gates" / "g.py").write_text("print('moved target')\n")
    _, second = tool(base, "hash", "--globs", "gates/**")
    assert second["digest"] != first["digest"]


def test_a_bad_glob_is_a_usage_error(trees: tuple[Path, Path]) -> None:
    base, copy = trees
    code, out = tool(base, "diff", "--from", str(copy), "--allow", "../x")
    assert code == 2 and "climbs out" in str(out["error"])
