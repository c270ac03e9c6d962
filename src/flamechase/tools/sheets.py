"""Contact sheets for a reviewer: the few images builders left, checked, decoded and resized
by the runtime before a critic sees them ("numbers first, eyes last: at most 3 contact sheets
of at most 1600 px").

    python -I -m flamechase.tools.sheets collect --from OWNER=PATH ... [--dir DIR] [--max 3]
                                                 [--px 1600]

Run in the critic's place (its working directory). From each `PATH/DIR` (in the order given,
names sorted; DIR is a relative path, `SHEETS_DIR` unless told) it takes at most `--max`
images into `DIR` of the working directory, as `sheet-N.png`, each at most `--px` on its
longest side. Nothing a builder wrote is trusted: a directory or file that is a symbolic link,
anything not a regular file, a file over `FILE_LIMIT` bytes, more than `PIXEL_LIMIT` pixels (a
decompression bomb is refused from its header, before it is decoded), or bytes that are not a
PNG, JPEG, GIF or WebP whatever the name says, is refused with a reason; every image is decoded
and re-encoded, so what reaches the critic is pixels the runtime wrote (no metadata, no name of
the builder's choosing). Prints one line, `SHEETS {"taken": [...], "refused": [...], "dir": ...}`.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import os
import shutil
import stat
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["FORMATS", "SHEETS_DIR", "collect", "main"]

SHEETS_DIR = ".sheets"  # the default; parrallello names its own (`--dir`)
FORMATS = ("PNG", "JPEG", "GIF", "WEBP")  # decoded by their content, never by their name
FILE_LIMIT = 32 * 1024 * 1024
PIXEL_LIMIT = 40_000_000  # a 40 Mpx image is already far beyond any contact sheet
SCAN_LIMIT = 64  # directory entries looked at per builder (a flood is cut, and said)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class Refused(Exception):
    """One image not taken, with why (a line of the output)."""


@contextlib.contextmanager
def _open_dir(root: Path, rel: str) -> Iterator[int | None]:
    """A descriptor of `root/rel`, walked one component at a time without following a link
    (None: there is no such directory, which is the usual case: no images)."""
    try:
        fd = os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        yield None
        return
    try:
        for part in rel.split("/"):
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                yield None
                return
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Refused(f"{rel} is not a directory (a link or a file)") from None
                raise
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _read(dir_fd: int, name: str) -> bytes:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused("a symbolic link") from None
        raise Refused(f"cannot be opened ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused("not a regular file")
        if st.st_size > FILE_LIMIT:
            raise Refused(f"{st.st_size} bytes, over the {FILE_LIMIT}-byte limit")
        data = os.read(fd, FILE_LIMIT + 1)
        while len(data) <= FILE_LIMIT:
            more = os.read(fd, FILE_LIMIT + 1 - len(data))
            if not more:
                break
            data += more
        if len(data) > FILE_LIMIT:
            raise Refused(f"grew over the {FILE_LIMIT}-byte limit")
        return data
    finally:
        os.close(fd)


def _decode(data: bytes, px: int) -> tuple[Any, str, tuple[int, int]]:
    """(the image, ready to save, at most `px` on its longest side; its real format; its
    size as it came)."""
    from PIL import Image, UnidentifiedImageError  # only this program needs Pillow

    Image.MAX_IMAGE_PIXELS = PIXEL_LIMIT
    with warnings.catch_warnings():
        # Pillow warns between the limit and twice it, and raises beyond: both refuse here.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            img: Image.Image = Image.open(io.BytesIO(data), formats=FORMATS)
            fmt = str(img.format)
            size = (int(img.width), int(img.height))
            if size[0] * size[1] > PIXEL_LIMIT:
                raise Refused(f"{size[0]}x{size[1]} px, over {PIXEL_LIMIT} pixels")
            img.load()
        except Refused:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise Refused(f"over {PIXEL_LIMIT} pixels (a decompression bomb?)") from None
        except UnidentifiedImageError:
            raise Refused(f"not an image in {', '.join(FORMATS)} (by its content)") from None
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            raise Refused(f"does not decode ({exc.__class__.__name__}: {exc})"[:200]) from None
    if img.mode not in ("RGB", "RGBA", "L", "LA"):
        img = img.convert("RGBA")
    if max(size) > px:
        img.thumbnail((px, px), Image.Resampling.LANCZOS)
    return img, fmt, size


def _clear(cwd: Path, rel: str) -> Path:
    """The destination, emptied: what was there before (from the source, or a critic's
    earlier round) is not this round's."""
    dest = cwd / rel
    parts = Path(rel).parts
    for p in (cwd.joinpath(*parts[: i + 1]) for i in range(len(parts))):
        if p.is_symlink() or (p.exists() and not p.is_dir()):
            p.unlink()
    if dest.is_dir():
        shutil.rmtree(dest)
    dest.mkdir(parents=True, exist_ok=True)
    return dest


def collect(
    sources: Sequence[tuple[str, Path]],
    cwd: Path,
    *,
    rel: str = SHEETS_DIR,
    most: int = 3,
    px: int = 1600,
) -> dict[str, Any]:
    if Path(rel).is_absolute() or ".." in Path(rel).parts or not Path(rel).parts:
        raise ValueError(f"--dir must be a relative path inside the tree, not {rel!r}")
    dest = _clear(cwd, rel)
    taken: list[dict[str, Any]] = []
    refused: list[dict[str, str]] = []
    for who, root in sources:
        try:
            with _open_dir(root, rel) as fd:
                if fd is None:
                    continue
                names = sorted(os.listdir(fd))
                if len(names) > SCAN_LIMIT:
                    refused.append(
                        {"from": who, "file": "*", "why": f"{len(names) - SCAN_LIMIT} more files"}
                    )
                for name in names[:SCAN_LIMIT]:
                    if len(taken) >= most:
                        refused.append({"from": who, "file": name, "why": f"over {most} sheets"})
                        continue
                    try:
                        img, fmt, size = _decode(_read(fd, name), px)
                    except Refused as exc:
                        refused.append({"from": who, "file": name, "why": str(exc)})
                        continue
                    out = f"sheet-{len(taken) + 1}.png"
                    img.save(dest / out, format="PNG")
                    taken.append(
                        {
                            "name": f"{rel}/{out}",
                            "from": who,
                            "file": name,
                            "format": fmt,
                            "size": [img.width, img.height],
                            "resized_from": list(size) if max(size) > px else None,
                        }
                    )
        except Refused as exc:
            refused.append({"from": who, "file": rel, "why": str(exc)})
    return {"taken": taken, "refused": refused, "dir": rel, "max": most, "px": px}


def _source(text: str) -> tuple[str, Path]:
    who, sep, path = text.partition("=")
    if not sep or not who or not path:
        raise argparse.ArgumentTypeError(f"--from wants OWNER=PATH, not {text!r}")
    return who, Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="flamechase.tools.sheets")
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--from", dest="sources", type=_source, nargs="*", default=[])
    c.add_argument("--dir", default=SHEETS_DIR)
    c.add_argument("--max", type=int, default=3)
    c.add_argument("--px", type=int, default=1600)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        result = collect(args.sources, Path.cwd(), rel=args.dir, most=args.max, px=args.px)
    except (OSError, ImportError, ValueError) as exc:
        print("SHEETS " + json.dumps({"error": f"{exc.__class__.__name__}: {exc}"}))
        return 3
    print("SHEETS " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
