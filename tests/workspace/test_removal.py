"""A tree an agent wrote is removed whole, whatever modes it left, and links are removed,
never followed."""

from __future__ import annotations

import os
from pathlib import Path

from flamechase.workspace.removal import remove_tree


def test_read_only_directories_and_files_go_too(tmp_path: Path) -> None:
    tree = tmp_path / "copy"
    locked = tree / "a" / "locked"
    locked.mkdir(parents=True)
    (locked / "f.txt").write_text("x")
    (locked / "deep").mkdir()
    (locked / "deep" / "g").write_text("y")
    (locked / "deep").chmod(0o000)
    locked.chmod(0o500)
    (tree / "ro.txt").write_text("z")
    (tree / "ro.txt").chmod(0o400)
    counted: list[int] = []
    remove_tree(tree, lambda: counted.append(1))
    assert not tree.exists()
    assert len(counted) == 7  # every file and directory, each once


def test_links_are_removed_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    tree = tmp_path / "copy"
    tree.mkdir()
    os.symlink(outside, tree / "dir-link")
    os.symlink(outside / "keep.txt", tree / "file-link")
    remove_tree(tree)
    assert not tree.exists()
    assert (outside / "keep.txt").read_text() == "mine"


def test_a_missing_path_and_a_plain_file(tmp_path: Path) -> None:
    remove_tree(tmp_path / "nothing")
    f = tmp_path / "f"
    f.write_text("x")
    remove_tree(f)
    assert not f.exists()
