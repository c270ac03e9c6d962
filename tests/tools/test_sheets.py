"""sheets: the images builders leave reach a critic as at most 3 contact sheets of at most
1600 px, decoded and written by the runtime; whatever else a builder planted (links, bombs,
text named .png, a flood) is refused with a reason. Real files, real Pillow, the real program."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

from PIL import Image

SHEETS_DIR = ".parrallello/sheets"  # nested, as parrallello's is: each part is checked


def tool(cwd: Path, *args: str) -> dict[str, object]:
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-m",
            "flamechase.tools.sheets",
            "collect",
            "--dir",
            SHEETS_DIR,
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("SHEETS ")
    out: dict[str, object] = json.loads(line.removeprefix("SHEETS "))
    return out


def sheets_of(root: Path) -> Path:
    d = root / SHEETS_DIR
    d.mkdir(parents=True, exist_ok=True)
    return d


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares `width` x `height` pixels in a few dozen bytes (a decompression
    bomb's header: decoding it would need gigabytes)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 1024))
        + chunk(b"IEND", b"")
    )


def refused(out: dict[str, object]) -> dict[str, str]:
    return {str(r["file"]): str(r["why"]) for r in out["refused"]}  # type: ignore[attr-defined]


def test_an_image_is_decoded_downsized_and_renamed_by_the_runtime(tmp_path: Path) -> None:
    builder, critic = tmp_path / "b", tmp_path / "c"
    critic.mkdir()
    Image.new("RGB", (4000, 1000), (200, 10, 10)).save(sheets_of(builder) / "wide.png")
    # A JPEG named .png: its real format is what counts, and it is written out as a PNG.
    Image.new("RGB", (800, 600), (0, 0, 255)).save(sheets_of(builder) / "small.png", "JPEG")
    out = tool(critic, "--from", f"core={builder}")
    taken = out["taken"]
    assert [(t["file"], t["format"], t["size"], t["resized_from"]) for t in taken] == [  # type: ignore[attr-defined]
        ("small.png", "JPEG", [800, 600], None),
        ("wide.png", "PNG", [1600, 400], [4000, 1000]),
    ]
    assert out["refused"] == []
    with Image.open(critic / SHEETS_DIR / "sheet-2.png") as img:
        assert (img.format, img.size) == ("PNG", (1600, 400))
    assert sorted(os.listdir(critic / SHEETS_DIR)) == ["sheet-1.png", "sheet-2.png"]


def test_hostile_files_are_refused_and_ten_images_give_three_sheets(tmp_path: Path) -> None:
    a, b, critic = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    critic.mkdir()
    da = sheets_of(a)
    (da / "0-bomb.png").write_bytes(png_header_only(100_000, 100_000))
    (da / "1-text.png").write_text("not an image at all\n")
    secret = tmp_path / "secret.png"
    Image.new("RGB", (10, 10)).save(secret)
    (da / "2-link.png").symlink_to(secret)
    (da / "3-dir.png").mkdir()
    for i in range(10):
        Image.new("RGB", (32, 32), (i * 20, 0, 0)).save(sheets_of(b) / f"img{i}.png")
    out = tool(critic, "--from", f"core={a}", f"tests={b}")
    why = refused(out)
    assert "pixels" in why["0-bomb.png"]
    assert "not an image" in why["1-text.png"]
    assert "symbolic link" in why["2-link.png"]
    assert "not a regular file" in why["3-dir.png"]
    assert [t["file"] for t in out["taken"]] == ["img0.png", "img1.png", "img2.png"]  # type: ignore[attr-defined]
    assert [k for k, v in why.items() if v == "over 3 sheets"] == [
        f"img{i}.png" for i in range(3, 10)
    ]
    assert sorted(os.listdir(critic / SHEETS_DIR)) == [f"sheet-{i}.png" for i in (1, 2, 3)]


def test_a_linked_sheets_directory_is_not_followed(tmp_path: Path) -> None:
    builder, critic, elsewhere = tmp_path / "b", tmp_path / "c", tmp_path / "elsewhere"
    critic.mkdir()
    elsewhere.mkdir()
    Image.new("RGB", (10, 10)).save(elsewhere / "x.png")
    (builder / ".parrallello").mkdir(parents=True)
    (builder / SHEETS_DIR).symlink_to(elsewhere)
    out = tool(critic, "--from", f"core={builder}")
    assert out["taken"] == []
    assert "not a directory" in refused(out)[SHEETS_DIR]


def test_what_was_in_the_critics_copy_before_is_not_a_sheet_of_this_round(tmp_path: Path) -> None:
    critic = tmp_path / "c"
    Image.new("RGB", (10, 10)).save(sheets_of(critic) / "old.png")
    out = tool(critic, "--from", f"core={tmp_path / 'nobody'}")
    assert out == {**out, "taken": [], "refused": []}
    assert os.listdir(critic / SHEETS_DIR) == []
