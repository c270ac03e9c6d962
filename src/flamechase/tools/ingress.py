"""Read the next events of an adapter's JSONL file from a cursor (parallel_flame_chase_mission's
`-p external_events=PATH`): safely, a bounded amount per pass.

    python -I -m flamechase.tools.ingress PATH OFFSET IDENTITY

The cursor is a byte offset and the file's identity (`dev:ino`): a file replaced (rotated)
or shorter than the offset is read from its start again. At most MAX_LINES lines and
MAX_OUT bytes of events per pass; a line over LINE_LIMIT bytes is skipped with an error (its
end searched for up to SKIP_LIMIT bytes); a last line without its newline is not read yet (a
writer is still writing it). Last stdout line: `{"events": [...], "cursor": {...},
"errors": [...]}` (exit 0). It only reads; what the events mean is the flow's business.
"""

from __future__ import annotations

import json
import os
import sys
from typing import BinaryIO

LINE_LIMIT = 64 * 1024
SKIP_LIMIT = 8 * 1024 * 1024
MAX_LINES = 100
MAX_OUT = 40 * 1024  # the receipt keeps the output's last 64 KiB


def read(path: str, offset: int, identity: str) -> dict[str, object]:
    errors: list[str] = []
    try:
        st = os.stat(path)
    except OSError:
        return {"events": [], "cursor": {"offset": 0, "identity": ""}, "errors": []}
    ident = f"{st.st_dev}:{st.st_ino}"
    if ident != identity or st.st_size < offset:
        offset = 0
    events: list[object] = []
    size = 0
    with open(path, "rb") as f:
        f.seek(offset)
        for _ in range(MAX_LINES):
            line = f.readline(LINE_LIMIT + 1)
            if not line:
                break
            if not line.endswith(b"\n"):
                if len(line) <= LINE_LIMIT:
                    break  # a truncated last line: wait for the rest
                skipped = _skip(f)
                if skipped is None:
                    break  # its end is not written yet either
                errors.append(f"a line at byte {offset} is over {LINE_LIMIT} bytes: skipped")
                offset = skipped
                f.seek(offset)
                continue
            if size + len(line) > MAX_OUT and events:
                break
            offset += len(line)
            try:
                events.append(json.loads(line))
                size += len(line)
            except ValueError:
                errors.append(f"a line ending at byte {offset} is not JSON: skipped")
    return {"events": events, "cursor": {"offset": offset, "identity": ident}, "errors": errors}


def _skip(f: BinaryIO) -> int | None:
    """The offset after the next newline (the oversized line's end), if within SKIP_LIMIT."""
    seen = 0
    while seen < SKIP_LIMIT:
        chunk = f.read(64 * 1024)
        if not chunk:
            return None
        at = chunk.find(b"\n")
        if at >= 0:
            return f.tell() - len(chunk) + at + 1
        seen += len(chunk)
    return f.tell()


def main(argv: list[str]) -> int:
    try:
        path, offset, identity = argv[0], int(argv[1]), argv[2]
    except (IndexError, ValueError):
        print(json.dumps({"error": "usage: ingress PATH OFFSET IDENTITY"}))
        return 1
    print(json.dumps(read(path, offset, identity), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
