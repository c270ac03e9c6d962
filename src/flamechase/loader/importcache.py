"""What a module's source imports, parsed once per distinct source.

Hashing a flow's code (`identity.code_hash`) follows the imports of its modules, and parsing
every module's syntax tree was most of the hash's cost at each start (about a tenth of a
second for a built-in flow on a quiet machine). The parse's answer depends only on the bytes
and the package they are resolved against, so it is kept under the SHA-256 of exactly those:
a module whose bytes changed by one bit is parsed afresh, and the code hash itself is always
taken over the bytes read now. The cache can therefore not let changed flow code pass as
unchanged; what it trusts is the state home it lives in, which also holds the code hashes the
runs recorded. It costs one JSON file in the state home (`cache/imports.json`, about 0.4 KB
a module, at most `LIMIT` entries) read once per process.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
from pathlib import Path

from flamechase.fsutil import atomic_write, read_regular_file
from flamechase.store import home

LIMIT = 2048
_MAX_BYTES = 4 << 20
_NAME = "imports.json"


class _Cache:
    """One state home's cache file, read once per process; `added` says it needs writing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, list[str]] = {}
        self.added = False
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(read_regular_file(path, _MAX_BYTES))
            if isinstance(data, dict):
                self.entries = {
                    k: v
                    for k, v in data.items()
                    if isinstance(k, str)
                    and isinstance(v, list)
                    and all(isinstance(x, str) for x in v)
                }


_caches: dict[Path, _Cache] = {}


def _cache() -> _Cache:
    path = home.state_home() / "cache" / _NAME
    if path not in _caches:
        _caches[path] = _Cache(path)
    return _caches[path]


def imported(source: bytes, package: str) -> list[str]:
    """The module names `source` imports (relative ones resolved against `package`), as
    `ast` reads them; every name of a `from X import a` counts as `X.a` too."""
    key = hashlib.sha256(package.encode() + b"\0" + source).hexdigest()
    cache = _cache()
    found = cache.entries.get(key)
    if found is None:
        found = parse_imports(source, package)
        cache.entries[key] = found
        cache.added = True
    return list(found)


def save() -> None:
    """Write what this process parsed (newest last, the oldest beyond LIMIT dropped) into an
    existing state home; one that cannot be written only costs the next process the parse."""
    cache = _cache()
    # Never the first thing in a state home: a refused command leaves none behind.
    if not cache.added or not cache.path.parent.parent.is_dir():
        return
    cache.added = False
    kept = dict(list(cache.entries.items())[-LIMIT:])
    with contextlib.suppress(OSError):
        home.ensure_private_dir(cache.path.parent)
        atomic_write(cache.path, json.dumps(kept, separators=(",", ":")).encode(), durable=False)


def parse_imports(source: bytes, package: str) -> list[str]:
    targets: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            targets += [base, *(f"{base}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            targets += [a.name for a in node.names]
    return targets
