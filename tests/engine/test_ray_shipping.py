"""What travels between the head and a node: packed trees, deltas, files checked on landing."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest

from flamechase.engine.executor import ShippedFile, TurnResult
from flamechase.engine.remote import head, shipping
from flamechase.engine.remote.node import TurnOutcome
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


def _hostile(*members: tuple[str, str, str | bytes]) -> shipping.Delta:
    """A delta no honest node sends: (name, kind "f"/"l"/"h", data or link target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, kind, what in members:
            info = tarfile.TarInfo(name)
            if kind == "f":
                assert isinstance(what, bytes)
                info.size = len(what)
                tar.addfile(info, io.BytesIO(what))
                continue
            info.type = tarfile.SYMTYPE if kind == "l" else tarfile.LNKTYPE
            info.linkname = str(what)
            tar.addfile(info)
    return shipping.Delta(data=buf.getvalue(), removed=(), entries=len(members))


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep\n")
    return outside


def test_a_delta_never_lands_through_a_link_in_the_heads_copy(tmp_path: Path) -> None:
    """The head's copy holds a link out of the place (links travel as links): a delta
    naming a file under it is refused, as is one that brings the link and the file."""
    outside = _outside(tmp_path)
    place = tmp_path / "head"
    place.mkdir()
    (place / "escape").symlink_to(outside)
    for delta in (
        _hostile(("escape/planted", "f", b"x")),
        _hostile(("new", "l", "../outside"), ("new/planted", "f", b"x")),
    ):
        with pytest.raises(head.LANDING_ERRORS, match="which is not a directory"):
            shipping.apply(delta, place)
    assert sorted(p.name for p in outside.iterdir()) == ["precious"]


def test_a_delta_never_writes_a_file_through_a_link_or_under_an_overlong_name(
    tmp_path: Path,
) -> None:
    """Checked before tarfile's own filter (which resolves paths with realpath, and some
    Pythons let a long enough path defeat it)."""
    outside = _outside(tmp_path)
    place = tmp_path / "head"
    place.mkdir()
    (place / "name").symlink_to(outside / "precious")
    with pytest.raises(head.LANDING_ERRORS, match="written through the link"):
        shipping.apply(_hostile(("name", "f", b"x")), place)
    long = "/".join(["d" * 200] * 20) + "/f"
    with pytest.raises(head.LANDING_ERRORS, match="a name longer"):
        shipping.apply(_hostile((long, "f", b"x")), place)
    assert (outside / "precious").read_bytes() != b"x"


def test_a_link_a_turn_points_elsewhere_lands(tmp_path: Path) -> None:
    """A venv's `python -> /usr/bin/python3` recreated, say: links out of the place travel
    as links, and one retargeted replaces the old one."""
    node, here = tmp_path / "node", tmp_path / "head"
    for place in (node, here):
        place.mkdir()
        (place / "python").symlink_to("/usr/bin/python3")
    before = shipping.scan(node)
    (node / "python").unlink()
    (node / "python").symlink_to("/usr/bin/python3.11")
    delta, _ = shipping.diff(node, before)
    shipping.apply(delta, here)
    assert os.readlink(here / "python") == "/usr/bin/python3.11"


def test_a_delta_carrying_a_hard_link_is_refused(tmp_path: Path) -> None:
    """Hard links travel as copies: one in a delta would let the node write through it to
    any file of the head's file system (tarfile's `tar` filter does not check their target)."""
    outside = _outside(tmp_path)
    place = tmp_path / "head"
    place.mkdir()
    for target in (str(outside / "precious"), "../outside/precious"):
        delta = _hostile(("x", "h", target), ("x", "f", b"planted\n"))
        with pytest.raises(head.LANDING_ERRORS, match="hard link"):
            shipping.apply(delta, place)
        assert (outside / "precious").read_text() == "keep\n"
    assert not (place / "x").exists()
    # An honest tree's hard links travel as copies.
    (outside / "twin").hardlink_to(outside / "precious")
    shipping.materialise(shipping.pack_tree(outside)[0], place)
    assert (place / "twin").read_text() == "keep\n"
    assert (place / "twin").stat().st_nlink == 1


def test_a_turn_whose_changes_cannot_land_is_failed_with_the_reason(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    place = tmp_path / "head"
    place.mkdir()
    (place / "escape").symlink_to(outside)
    art = ShippedFile("a.txt", hashlib.sha256(b"a").hexdigest(), b"a")
    outcome = TurnOutcome(
        result=TurnResult(
            status="valid",
            started="s",
            ended="e",
            duration=1.0,
            result={"status": "progress"},
            artifacts=(art,),
        ),
        delta=_hostile(("escape/planted", "f", b"x")),
        io_files=(),
        node="n",
        seconds=1.0,
    )
    with pytest.raises(head.LANDING_ERRORS) as caught:
        shipping.apply(outcome.delta, place)
    failed = head.unlanded(outcome, "lane-2", caught.value)
    assert failed.status == "failed" and failed.artifacts == ()
    assert failed.error is not None and failed.error.startswith(
        "what lane-2's turn changed could not be brought back from its node: "
    )
    assert "escape/planted' passes through" in failed.error


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
