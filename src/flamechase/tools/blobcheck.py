"""Re-hash frozen artifact blobs before anything consumes them (parallel_flame_chase_mission
checks an accepted package this way before lane 1 is given it).

    python -I -m flamechase.tools.blobcheck '[{"path": "a.py", "sha256": "...", "blob": "/..."}]'

Last stdout line: `{"ok": N}` (exit 0) when every blob is a regular file with its hash, else
`{"error": "...", "changed": [paths]}` (exit 1). Reads only; never follows a link.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys


def _sha256(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        digest = hashlib.sha256()
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
        return digest.hexdigest()


def check(items: list[dict[str, str]]) -> list[str]:
    """The paths whose blob is missing, not a regular file, or of another hash."""
    return [
        str(it.get("path"))
        for it in items
        if not it.get("blob") or _sha256(str(it["blob"])) != it.get("sha256")
    ]


def main(argv: list[str]) -> int:
    try:
        items = json.loads(argv[0])
        assert isinstance(items, list) and all(isinstance(i, dict) for i in items)
    except (IndexError, ValueError, AssertionError):
        print(json.dumps({"error": "usage: blobcheck JSON-LIST-OF-{path,sha256,blob}"}))
        return 1
    changed = check(items)
    if changed:
        print(json.dumps({"error": f"{len(changed)} artifacts changed", "changed": changed}))
        return 1
    print(json.dumps({"ok": len(items)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
