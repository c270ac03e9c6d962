"""What travels between the head and a node: packed trees, deltas, files checked on landing."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import pytest

from flamechase.engine.executor import ShippedFile
from flamechase.engine.remote import shipping
from flamechase.store.blobs import ArtifactRefused, BlobStore


def _tree(root: Path) -> Path:
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / "README.md").write_text("hello\n")
    (root / "pkg" / "mod.py").write_text("X = 1\n")
    (root / "pkg" / "deep" / "data.bin").write_bytes(os.urandom(4096))
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "link").symlink_to("/usr/bin/env")  # absolute links travel as links
    os.mkfifo(root / "fifo")  # skipped, as snapshots skip it
    return root


def _same(a: Path, b: Path) -> None:
    ma, mb = shipping.scan(a), shipping.scan(b)
    assert set(ma) == set(mb)
    for name, entry in ma.items():
        assert entry[0] == mb[name][0]
        if entry[0] == "f":
            assert (a / name).read_bytes() == (b / name).read_bytes()
            assert entry[2] == mb[name][2], name  # mode
        if entry[0] == "l":
            assert entry[5] == mb[name][5]


def test_a_packed_tree_lands_as_it_was_without_special_files(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src")
    data, entries = shipping.pack_tree(src)
    dest = tmp_path / "node" / "copy"
    manifest = shipping.materialise(data, dest)
    assert entries == len(manifest) == 7
    assert not (dest / "fifo").exists()
    assert os.readlink(dest / "link") == "/usr/bin/env"
    assert os.access(dest / "run.sh", os.X_OK)
    (src / "fifo").unlink()
    _same(src, dest)


def test_materialise_replaces_what_was_there(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src")
    dest = tmp_path / "copy"
    dest.mkdir()
    (dest / "stale.txt").write_text("from a dead node\n")
    shipping.materialise(shipping.pack_tree(src)[0], dest)
    assert not (dest / "stale.txt").exists()


def test_a_delta_carries_changes_removals_and_kind_changes(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src")
    (src / "fifo").unlink()
    head = tmp_path / "head"
    node = tmp_path / "node"
    data, _ = shipping.pack_tree(src)
    shipping.materialise(data, head)
    before = shipping.materialise(data, node)

    (node / "pkg" / "mod.py").write_text("X = 2\n")
    (node / "README.md").unlink()
    (node / "new" / "dir").mkdir(parents=True)
    (node / "new" / "dir" / "f.txt").write_text("new\n")
    (node / "run.sh").chmod(0o644)
    (node / "link").unlink()
    (node / "link").mkdir()  # a link became a directory
    (node / "link" / "inside").write_text("i\n")
    os.mkfifo(node / "pipe")

    delta, after = shipping.diff(node, before)
    assert "README.md" in delta.removed and "link" in delta.removed
    shipping.apply(delta, head)
    (node / "pipe").unlink()
    _same(node, head)
    again, _ = shipping.diff(node, after)
    assert again.empty


def test_a_rewrite_that_keeps_size_and_mtime_is_still_seen(tmp_path: Path) -> None:
    node = tmp_path / "node"
    node.mkdir()
    (node / "a.txt").write_text("aaaa\n")
    before = shipping.scan(node)
    st = os.stat(node / "a.txt")
    (node / "a.txt").write_text("bbbb\n")
    os.utime(node / "a.txt", ns=(st.st_atime_ns, st.st_mtime_ns))
    delta, _ = shipping.diff(node, before)
    assert delta.entries == 1


def test_removal_never_follows_a_link_out_of_the_place(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep\n")
    head = tmp_path / "head"
    head.mkdir()
    (head / "escape").symlink_to(outside)
    delta = shipping.Delta(data=b"", removed=("escape/precious",), entries=0)
    with pytest.raises(ValueError, match="not a directory"):
        shipping.apply(delta, head)
    assert (outside / "precious").read_text() == "keep\n"


def test_landed_files_are_checked_against_their_hash(tmp_path: Path) -> None:
    good = ShippedFile("pkg/patch.diff", hashlib.sha256(b"patch\n").hexdigest(), b"patch\n")
    root = tmp_path / "artifacts"
    root.mkdir()
    shipping.land(root, [good])
    assert (root / "pkg" / "patch.diff").read_bytes() == b"patch\n"
    bad = dataclasses.replace(good, data=b"tampered\n")
    with pytest.raises(ArtifactRefused, match="arrived with sha256"):
        shipping.land(root, [bad])
    assert (root / "pkg" / "patch.diff").read_bytes() == b"patch\n"


@pytest.mark.parametrize("path", ["../up", "/abs", "a/../../b"])
def test_landed_files_stay_inside_their_root(tmp_path: Path, path: str) -> None:
    f = ShippedFile(path, hashlib.sha256(b"x").hexdigest(), b"x")
    with pytest.raises((ArtifactRefused, ValueError)):
        shipping.land(tmp_path / "root", [f])
    assert not (tmp_path / "up").exists()


def test_what_the_head_froze_must_be_what_the_node_sent(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    root.mkdir()
    (root / "a.txt").write_text("sent\n")
    frozen = BlobStore(tmp_path / "blobs").freeze(root, [("a.txt", "d")])
    sent = ShippedFile("a.txt", hashlib.sha256(b"sent\n").hexdigest(), b"sent\n")
    shipping.check_frozen(frozen, [sent])
    other = dataclasses.replace(sent, sha256=hashlib.sha256(b"other").hexdigest())
    with pytest.raises(ArtifactRefused, match="differs from the file the node sent"):
        shipping.check_frozen(frozen, [other])
