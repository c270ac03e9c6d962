"""Frozen artifacts: refused through links and tricks, immutable once published, verified out."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flamechase.errors import ArtifactError, ControlPathViolation
from flamechase.store import blobs
from flamechase.store.blobs import (
    ARTIFACT_FILE_LIMIT,
    ArtifactRefused,
    BlobStore,
    FrozenArtifact,
    canonical_path,
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def art(tmp_path: Path) -> Path:
    root = tmp_path / "artifacts" / "lane-2"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "patch.diff").write_bytes(b"--- a\n+++ b\n")
    (root / "pkg" / "sub" / "mod.py").write_bytes(b"X = 2\n")
    return root


@pytest.fixture
def store(tmp_path: Path) -> BlobStore:
    (tmp_path / "run").mkdir()
    return BlobStore(tmp_path / "run" / "blobs")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """The user's files an agent would love to publish or overwrite."""
    secret = tmp_path / "home" / "secret"
    secret.mkdir(parents=True)
    (secret / "id_rsa").write_bytes(b"PRIVATE KEY")
    return secret


def _refused(store: BlobStore, art: Path, path: str, match: str) -> str:
    with pytest.raises(ArtifactRefused, match=match) as info:
        store.freeze(art, [(path, "d")])
    message = str(info.value)
    assert "\n" not in message
    return message


def _blob_files(store: BlobStore) -> list[Path]:
    base = store.root / "sha256"
    return sorted(p for p in base.rglob("*") if p.is_file()) if base.exists() else []


# -- freeze: the happy path ---------------------------------------------------------------


def test_freeze_hashes_copies_and_makes_read_only(store: BlobStore, art: Path) -> None:
    frozen = store.freeze(art, [("patch.diff", "the patch"), ("pkg/sub/mod.py", "module")])
    assert frozen == [
        FrozenArtifact("patch.diff", _sha(b"--- a\n+++ b\n"), 12, "the patch"),
        FrozenArtifact("pkg/sub/mod.py", _sha(b"X = 2\n"), 6, "module"),
    ]
    assert frozen[0].as_dict() == {
        "path": "patch.diff",
        "sha256": _sha(b"--- a\n+++ b\n"),
        "size": 12,
        "description": "the patch",
    }
    blob = store.blob_path(frozen[1].sha256)
    assert blob == store.root / "sha256" / frozen[1].sha256[:2] / frozen[1].sha256[2:]
    assert blob.read_bytes() == b"X = 2\n"
    assert stat.S_IMODE(blob.stat().st_mode) == 0o444
    assert stat.S_IMODE(blob.parent.stat().st_mode) == 0o555
    assert store.verify(frozen[1].sha256)
    assert os.listdir(store.root / "staging") == []


def test_edit_after_publication_does_not_change_blob(store: BlobStore, art: Path) -> None:
    (frozen,) = store.freeze(art, [("pkg/sub/mod.py", "m")])
    (art / "pkg" / "sub" / "mod.py").write_bytes(b"X = 666  # edited after publication\n")
    os.remove(art / "pkg" / "sub" / "mod.py")
    assert store.blob_path(frozen.sha256).read_bytes() == b"X = 2\n"
    assert store.verify(frozen.sha256)


def test_same_content_twice_is_one_blob(store: BlobStore, art: Path) -> None:
    (art / "copy.py").write_bytes(b"X = 2\n")
    first = store.freeze(art, [("pkg/sub/mod.py", "a")])
    second = store.freeze(art, [("copy.py", "b"), ("patch.diff", "c")])
    assert first[0].sha256 == second[0].sha256
    assert len(_blob_files(store)) == 2


def test_dot_components_are_canonicalized(store: BlobStore, art: Path) -> None:
    (frozen,) = store.freeze(art, [("./pkg/./sub/mod.py", "m")])
    assert frozen.path == "pkg/sub/mod.py"
    assert canonical_path("./a/./b") == ("a", "b")


def test_empty_file_and_unicode_names(store: BlobStore, art: Path) -> None:
    (art / "données é.txt").write_bytes(b"")
    (frozen,) = store.freeze(art, [("données é.txt", "")])
    assert frozen.size == 0
    assert frozen.sha256 == _sha(b"")


def test_corrupt_existing_blob_is_replaced(store: BlobStore, art: Path) -> None:
    (frozen,) = store.freeze(art, [("patch.diff", "p")])
    blob = store.blob_path(frozen.sha256)
    os.chmod(blob.parent, 0o755)
    os.chmod(blob, 0o644)
    blob.write_bytes(b"tampered")
    os.chmod(blob.parent, 0o555)
    assert not store.verify(frozen.sha256)
    store.freeze(art, [("patch.diff", "p")])
    assert store.verify(frozen.sha256)
    assert stat.S_IMODE(blob.stat().st_mode) == 0o444


# -- freeze: refusals ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "match"),
    [
        ("/etc/passwd", "absolute"),
        ("../lane-3/x", r"'\.\.'"),
        ("pkg/../../x", r"'\.\.'"),
        ("..", r"'\.\.'"),
        ("a\0b", "NUL"),
        ("pkg\\sub\\mod.py", "backslash"),
        ("", "empty"),
        ("pkg//sub/mod.py", "empty component"),
        ("pkg/sub/", "empty component"),
        (".", "artifact root itself"),
        ("./.", "artifact root itself"),
        ("bad\udcff", "UTF-8"),
        ("a" * 256, "255 bytes"),
        ("a/" * 2100 + "b", "4096 bytes"),
    ],
)
def test_unsafe_paths_are_refused(store: BlobStore, art: Path, path: str, match: str) -> None:
    message = _refused(store, art, path, match)
    assert message.startswith("artifact ")
    assert _blob_files(store) == []


def test_artifact_through_symlinked_dir_is_refused(
    store: BlobStore, art: Path, outside: Path
) -> None:
    (art / "keys").symlink_to(outside)
    message = _refused(store, art, "keys/id_rsa", "passes through a symlink")
    assert message == "artifact 'keys/id_rsa': passes through a symlink ('keys')"
    (art / "pkg" / "deep").symlink_to(outside)
    _refused(store, art, "pkg/deep/id_rsa", r"passes through a symlink \('pkg/deep'\)")
    assert _blob_files(store) == []


def test_symlinked_final_component_is_refused(store: BlobStore, art: Path, outside: Path) -> None:
    (art / "key").symlink_to(outside / "id_rsa")
    _refused(store, art, "key", "symbolic link")
    (art / "inside-link").symlink_to("patch.diff")  # even a link within the root
    _refused(store, art, "inside-link", "symbolic link")
    (art / "null").symlink_to("/dev/null")
    _refused(store, art, "null", "symbolic link")


def test_symlinked_artifact_root_is_refused(
    store: BlobStore, art: Path, outside: Path, tmp_path: Path
) -> None:
    linked = tmp_path / "linked-root"
    linked.symlink_to(outside)
    with pytest.raises(ArtifactRefused, match=r"artifact root .* is a symbolic link"):
        store.freeze(linked, [("id_rsa", "k")])
    with pytest.raises(ArtifactRefused, match="is missing"):
        store.freeze(tmp_path / "nope", [("x", "k")])
    assert _blob_files(store) == []


def test_fifo_socket_device_and_directory_are_refused(store: BlobStore, art: Path) -> None:
    os.mkfifo(art / "fifo")
    _refused(store, art, "fifo", "is a FIFO, not a regular file")
    _refused(store, art, "pkg", "is a directory")
    _refused(store, art, "pkg/sub/missing.py", "is missing")
    _refused(store, art, "nodir/x.py", r"is missing \(no directory 'nodir'\)")
    _refused(store, art, "patch.diff/x", r"'patch.diff' is not a directory")
    try:
        os.mknod(art / "dev", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError):
        return
    _refused(store, art, "dev", "is a device")


def test_file_over_64_mib_is_refused(store: BlobStore, art: Path) -> None:
    with open(art / "huge.bin", "wb") as handle:
        handle.truncate(ARTIFACT_FILE_LIMIT + 1)
    _refused(store, art, "huge.bin", "exceeds 67108864 bytes")
    assert _blob_files(store) == []
    assert os.listdir(store.root / "staging") == []


def test_size_limit_is_inclusive(tmp_path: Path, art: Path) -> None:
    small = BlobStore(tmp_path / "blobs", file_limit=10)
    (art / "ten").write_bytes(b"0123456789")
    (art / "eleven").write_bytes(b"0123456789A")
    assert small.freeze(art, [("ten", "")])[0].size == 10
    _refused(small, art, "eleven", "exceeds 10 bytes")


def test_growing_file_is_cut_off_while_hashing(tmp_path: Path) -> None:
    path = tmp_path / "grows"
    path.write_bytes(b"x" * 5000)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(blobs._TooLargeError):
            blobs._copy_hashing(fd, None, 4096)
    finally:
        os.close(fd)


def test_repeated_artifact_is_refused(store: BlobStore, art: Path) -> None:
    with pytest.raises(ArtifactRefused, match="listed twice"):
        store.freeze(art, [("patch.diff", "a"), ("./patch.diff", "b")])
    with pytest.raises(ArtifactRefused, match="not \\(path, description\\)"):
        store.freeze(art, [("patch.diff",)])  # type: ignore[list-item]


def test_bad_path_is_refused_before_anything_is_stored(store: BlobStore, art: Path) -> None:
    with pytest.raises(ArtifactRefused, match="absolute"):
        store.freeze(art, [("patch.diff", "ok"), ("/etc/passwd", "bad")])
    assert _blob_files(store) == []


def test_directory_swapped_for_symlink_mid_walk_cannot_redirect_read(
    store: BlobStore, art: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent swaps `pkg/sub` for a link to its target right before the file is opened."""
    (outside / "mod.py").write_bytes(b"SECRET")
    real_open = os.open
    swapped: list[bool] = []

    def racing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "mod.py" and not swapped:
            os.rename(art / "pkg" / "sub", art / "pkg" / "sub-old")
            (art / "pkg" / "sub").symlink_to(outside)
            swapped.append(True)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", racing_open)
    (frozen,) = store.freeze(art, [("pkg/sub/mod.py", "m")])
    monkeypatch.undo()
    assert swapped
    assert frozen.sha256 == _sha(b"X = 2\n")
    assert all(blob.read_bytes() != b"SECRET" for blob in _blob_files(store))
    # and the next publication through the planted link is refused
    _refused(store, art, "pkg/sub/mod.py", "passes through a symlink")


def test_store_root_replaced_by_link_stops_the_run(
    store: BlobStore, art: Path, tmp_path: Path
) -> None:
    store.freeze(art, [("patch.diff", "p")])
    os.rename(store.root, tmp_path / "moved-blobs")
    store.root.symlink_to(tmp_path / "moved-blobs")
    with pytest.raises(ControlPathViolation, match=r"blob store .* is not a real directory"):
        store.freeze(art, [("patch.diff", "p")])


_TOKENS = [
    "a",
    ".",
    "..",
    "/",
    "\\",
    "\0",
    "pkg",
    "sub",
    "mod.py",
    "link",
    "fifo",
    "patch.diff",
    "é",
    "\udcff",
    "//",
]


@settings(max_examples=20, deadline=None)
@given(
    st.lists(st.sampled_from(_TOKENS), max_size=8).map("".join)
    | st.text(st.characters(), max_size=30)
)
def test_any_path_string_gives_a_result_or_a_refusal(
    tmp_path_factory: pytest.TempPathFactory, path: str
) -> None:
    base = tmp_path_factory.getbasetemp() / "hypothesis-blobs"
    root = base / "art"
    if not root.exists():
        (root / "pkg" / "sub").mkdir(parents=True)
        (root / "pkg" / "sub" / "mod.py").write_bytes(b"X = 2\n")
        (root / "patch.diff").write_bytes(b"p")
        (root / "link").symlink_to(root / "pkg")
        (root / "pkg" / "link").symlink_to("/dev/null")
        os.mkfifo(root / "fifo")
    store = BlobStore(base / "blobs")
    try:
        result = store.freeze(root, [(path, "d")])
    except ArtifactRefused as exc:
        assert "\n" not in str(exc)
        return
    assert len(result) == 1
    assert store.verify(result[0].sha256)
    assert ".." not in result[0].path.split("/")


def test_allow_removal_makes_the_store_deletable(store: BlobStore, art: Path) -> None:
    (frozen,) = store.freeze(art, [("patch.diff", "p")])
    store.allow_removal()
    assert stat.S_IMODE(store.blob_path(frozen.sha256).parent.stat().st_mode) == 0o700
    shutil.rmtree(store.root)
    BlobStore(store.root).allow_removal()  # nothing there: a no-op


# -- verify -------------------------------------------------------------------------------


def test_verify_rejects_missing_malformed_and_linked_blobs(
    store: BlobStore, art: Path, tmp_path: Path
) -> None:
    (frozen,) = store.freeze(art, [("patch.diff", "p")])
    assert store.verify(frozen.sha256)
    assert not store.verify("0" * 64)
    assert not store.verify("not-hex")
    assert not store.verify(frozen.sha256.upper())
    blob = store.blob_path(frozen.sha256)
    copy = tmp_path / "same-content"
    copy.write_bytes(blob.read_bytes())
    os.chmod(blob.parent, 0o755)
    blob.unlink()
    blob.symlink_to(copy)  # right bytes, but through a link
    assert not store.verify(frozen.sha256)
    with pytest.raises(ValueError, match="SHA-256"):
        store.blob_path("xyz")


# -- extract ------------------------------------------------------------------------------


def _manifest(frozen: list[FrozenArtifact]) -> list[dict[str, Any]]:
    return [item.as_dict() for item in frozen]


def test_extract_rebuilds_the_package(store: BlobStore, art: Path, tmp_path: Path) -> None:
    frozen = store.freeze(art, [("patch.diff", "p"), ("pkg/sub/mod.py", "m")])
    dest = tmp_path / "out" / "report-1"
    written = store.extract(_manifest(frozen), dest)
    assert written == [dest / "patch.diff", dest / "pkg" / "sub" / "mod.py"]
    assert (dest / "pkg" / "sub" / "mod.py").read_bytes() == b"X = 2\n"
    assert (dest / "patch.diff").read_bytes() == b"--- a\n+++ b\n"
    # again: replaces regular files in place
    (dest / "patch.diff").write_bytes(b"local edit")
    store.extract(_manifest(frozen), dest)
    assert (dest / "patch.diff").read_bytes() == b"--- a\n+++ b\n"
    assert sorted(os.listdir(dest)) == ["patch.diff", "pkg"]


def test_extract_refuses_tampered_blob(store: BlobStore, art: Path, tmp_path: Path) -> None:
    frozen = store.freeze(art, [("patch.diff", "p"), ("pkg/sub/mod.py", "m")])
    blob = store.blob_path(frozen[1].sha256)
    os.chmod(blob, 0o644)
    blob.write_bytes(b"X = 'pwned'\n")
    dest = tmp_path / "out"
    with pytest.raises(ArtifactError, match="does not match its recorded sha256") as info:
        store.extract(_manifest(frozen), dest)
    assert "\n" not in str(info.value)
    assert not dest.exists()  # every blob is checked before anything is written


def test_extract_refuses_truncated_or_extended_blob(
    store: BlobStore, art: Path, tmp_path: Path
) -> None:
    (frozen,) = store.freeze(art, [("patch.diff", "p")])
    entry = frozen.as_dict()
    with pytest.raises(ArtifactError, match="does not match"):
        store.extract([{**entry, "size": entry["size"] - 1}], tmp_path / "a")
    with pytest.raises(ArtifactError, match="does not match"):
        store.extract([{**entry, "size": entry["size"] + 1}], tmp_path / "b")
    assert not (tmp_path / "a" / "patch.diff").exists()


@pytest.mark.parametrize(
    "path", ["../escape.txt", "/tmp/escape.txt", "a/../../escape.txt", "a\\..\\x", "a\0b", ""]
)
def test_extract_refuses_escaping_paths_before_writing_anything(
    store: BlobStore, art: Path, tmp_path: Path, path: str
) -> None:
    (frozen,) = store.freeze(art, [("patch.diff", "p")])
    good = frozen.as_dict()
    bad = {**good, "path": path}
    dest = tmp_path / "out"
    with pytest.raises(ArtifactError, match="refusing to extract"):
        store.extract([good, bad], dest)
    assert not dest.exists()
    assert not (tmp_path / "escape.txt").exists()


def test_extract_refuses_malformed_manifest(store: BlobStore, art: Path, tmp_path: Path) -> None:
    (frozen,) = store.freeze(art, [("patch.diff", "p")])
    good = frozen.as_dict()
    for bad, match in [
        ({**good, "sha256": "abc"}, "sha256"),
        ({**good, "size": -1}, "size"),
        ({**good, "size": True}, "size"),
        ("patch.diff", "not an object"),
    ]:
        with pytest.raises(ArtifactError, match=match):
            store.extract([bad], tmp_path / "out")  # type: ignore[list-item]
    with pytest.raises(ArtifactError, match="listed twice"):
        store.extract([good, {**good, "path": "./patch.diff"}], tmp_path / "out")


def test_extract_refuses_symlinked_destination(
    store: BlobStore, art: Path, tmp_path: Path, outside: Path
) -> None:
    (frozen,) = store.freeze(art, [("patch.diff", "p")])
    dest = tmp_path / "out"
    dest.symlink_to(outside)
    with pytest.raises(ArtifactError, match="symbolic link"):
        store.extract(_manifest([frozen]), dest)
    assert sorted(os.listdir(outside)) == ["id_rsa"]


def test_extract_never_writes_through_a_link_under_dest(
    store: BlobStore, art: Path, tmp_path: Path, outside: Path
) -> None:
    frozen = store.freeze(art, [("patch.diff", "p"), ("pkg/sub/mod.py", "m")])
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "pkg").symlink_to(outside)
    with pytest.raises(ArtifactError, match="refusing to write through it"):
        store.extract(_manifest(frozen), dest)
    assert sorted(os.listdir(outside)) == ["id_rsa"]
    assert os.listdir(dest) == ["pkg"]  # nothing written: the layout is checked first
    (dest / "pkg").unlink()
    (dest / "patch.diff").symlink_to(outside / "id_rsa")
    with pytest.raises(ArtifactError, match="refusing to overwrite"):
        store.extract(_manifest(frozen), dest)
    assert (outside / "id_rsa").read_bytes() == b"PRIVATE KEY"


def test_extract_refuses_missing_or_linked_blob(
    store: BlobStore, art: Path, tmp_path: Path
) -> None:
    (frozen,) = store.freeze(art, [("patch.diff", "p")])
    missing = {**frozen.as_dict(), "sha256": _sha(b"never stored")}
    with pytest.raises(ArtifactError, match="missing"):
        store.extract([missing], tmp_path / "a")
    blob = store.blob_path(frozen.sha256)
    copy = tmp_path / "copy"
    copy.write_bytes(blob.read_bytes())
    os.chmod(blob.parent, 0o755)
    blob.unlink()
    blob.symlink_to(copy)
    with pytest.raises(ArtifactError, match="link"):
        store.extract(_manifest([frozen]), tmp_path / "b")
    with pytest.raises(ArtifactError, match="missing"):
        BlobStore(tmp_path / "no-store").extract(_manifest([frozen]), tmp_path / "c")
