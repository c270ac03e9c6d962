"""A pinned flow's code, read from its commit's own objects: what was reviewed is what runs.

`read()` lists the commit's tree (`git ls-tree`), finds the flow's directory (`#SUBDIR`, the
repository root, or `SUBDIR.py`) and refuses (FlowUnsafe, one line) a flow whose directory
holds a symlink that resolves outside that directory (an absolute target, `..` past it, into
the rest of the repository) or a submodule (a commit of another repository, which the pinned
one does not contain). A symlink that stays inside the flow's directory is followed within the
commit. `import_tree()` then imports the flow from the commit's blobs, never from the files
of the checkout, so nothing written into the checkout after it was cloned runs: an edit git
was told to ignore, a planted bytecode cache, a file swapped in after the checkout was
verified. Modules keep `__file__` in the checkout (tracebacks, the files a flow reads next to
its code); their loader's `get_data` serves the commit's bytes, and the code hash
(loader/identity.py) hashes those.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from importlib.readers import FileReader
from pathlib import Path
from types import ModuleType

from flamechase.errors import FlowNotFound, FlowUnsafe
from flamechase.loader import gitsource
from flamechase.loader.modules import IMPORT_FAILURES, USER_PREFIX, first_line

_LINK = "120000"
_GITLINK = "160000"
_HOPS = 40  # symlinks followed while resolving one path, as the kernel allows


@dataclasses.dataclass(frozen=True, slots=True)
class _Item:
    mode: str
    sha: str
    target: str = ""  # a symlink's target, as the commit records it


@dataclasses.dataclass(slots=True)
class Tree:
    """The flow's files at one commit: `root` is its directory (or .py file), resolved,
    relative to the repository; `code` holds the bytes of its .py files, from git's objects."""

    checkout: Path
    commit: str
    root: str
    package: bool
    items: dict[str, _Item]
    dirs: frozenset[str]
    code: dict[str, bytes]

    def under(self, rel: str) -> bool:
        return not self.root or rel == self.root or rel.startswith(self.root + "/")

    def resolve(self, rel: str) -> str | None:
        """`rel` with its symlinks followed in the commit, if it stays in the flow."""
        found = _resolve(rel, self.items)
        return found if found is not None and self.under(found) else None

    def is_dir(self, rel: str) -> bool:
        return rel == "" or rel in self.dirs

    def is_file(self, rel: str) -> bool:
        item = self.items.get(rel)
        return item is not None and item.mode not in (_LINK, _GITLINK)

    def data(self, rel: str) -> bytes:
        """The bytes of the flow's file `rel` (resolved) at the commit."""
        if rel not in self.code:
            blob = _blobs(self.checkout, [self.items[rel].sha])
            self.code[rel] = blob[self.items[rel].sha]
        return self.code[rel]


def read(checkout: Path, commit: str, subdir: str, shown: str) -> Tree:
    """The flow `subdir` names at `commit`; FlowNotFound/FlowUnsafe (one line) if none/unsafe."""
    items = _ls_tree(checkout, commit)
    dirs = frozenset(p.rsplit("/", n)[0] for p in items for n in range(1, p.count("/") + 1))
    root = _resolve(subdir, items) if subdir else ""
    if root is None:
        raise FlowUnsafe(
            f"{shown}: {subdir} leads out of the repository (through a symlink); a pinned flow "
            "runs only its commit's own files"
        )
    tree = Tree(checkout, commit, root, True, items, dirs, {})
    if not tree.is_dir(root):
        single = root if root.endswith(".py") else _resolve(f"{subdir}.py", items)
        if single is None or not tree.is_file(single):
            raise FlowNotFound(
                f"{shown}: the repository has no {subdir or 'root'} at commit {commit[:12]}"
            )
        tree.root, tree.package = single, False
    _refuse_escapes(tree, subdir, shown)
    init = tree.resolve(_join(root, "__init__.py"))
    if tree.package and (init is None or not tree.is_file(init)):
        raise FlowNotFound(
            f"{shown}: {subdir or 'the repository root'} is not a flow "
            "package (no __init__.py); name the flow's directory with #SUBDIR"
        )
    code = sorted(p for p in items if tree.under(p) and p.endswith(".py") and tree.is_file(p))
    blobs = _blobs(checkout, [items[p].sha for p in code])
    tree.code = {p: blobs[items[p].sha] for p in code}
    return tree


def _refuse_escapes(tree: Tree, subdir: str, shown: str) -> None:
    flow_dir = subdir or "the repository root"
    for path, item in sorted(tree.items.items()):
        if not tree.under(path):
            continue
        if item.mode == _GITLINK:
            raise FlowUnsafe(
                f"{shown}: {path} is a submodule (commit {item.sha[:12]} of another "
                "repository), which the pinned commit does not contain; a pinned flow runs "
                "only its commit's own files"
            )
        if item.mode == _LINK and tree.resolve(path) is None:
            raise FlowUnsafe(
                f"{shown}: {path} is a symlink to {item.target!r}, outside the flow's directory "
                f"{flow_dir}; a pinned flow runs only its commit's own files"
            )


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _resolve(path: str, items: dict[str, _Item]) -> str | None:
    """`path` (relative to the repository) with every symlink on it followed as the commit
    records it; None when it leads out of the repository (absolute, `..` past its root, a
    loop). Components are resolved one by one, so `..` after a link is physical."""
    todo = [p for p in path.split("/") if p]
    done: list[str] = []
    hops = 0
    while todo:
        part = todo.pop(0)
        if part == ".":
            continue
        if part == "..":
            if not done:
                return None
            done.pop()
            continue
        done.append(part)
        item = items.get("/".join(done))
        if item is None or item.mode != _LINK:
            continue
        hops += 1
        if hops > _HOPS or item.target.startswith("/"):
            return None
        done.pop()
        todo = [p for p in item.target.split("/") if p] + todo
    return "/".join(done)


def _ls_tree(checkout: Path, commit: str) -> dict[str, _Item]:
    """Every file, symlink and submodule of `commit`, by path, symlinks with their targets."""
    proc = gitsource.git_bytes("ls-tree", "-r", "-z", "--full-tree", commit, cwd=checkout)
    if proc.returncode != 0:
        raise FlowNotFound(f"the cached checkout {checkout} cannot list commit {commit[:12]}")
    items: dict[str, _Item] = {}
    for record in proc.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, _kind, sha = meta.decode().split(" ")
        items[name.decode("utf-8", "surrogateescape")] = _Item(mode, sha)
    links = [p for p, item in items.items() if item.mode == _LINK]
    targets = _blobs(checkout, [items[p].sha for p in links])
    for path in links:
        target = targets[items[path].sha].decode("utf-8", "surrogateescape")
        items[path] = _Item(_LINK, items[path].sha, target)
    return items


def _blobs(checkout: Path, shas: list[str]) -> dict[str, bytes]:
    """The contents of the objects `shas`, read from the checkout's object store in one call."""
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    proc = gitsource.git_bytes(
        "cat-file", "--batch", cwd=checkout, input="".join(f"{s}\n" for s in wanted).encode()
    )
    out, pos, found = proc.stdout, 0, {}
    for sha in wanted:
        end = out.find(b"\n", pos)
        header = out[pos:end].split(b" ") if end >= 0 else []
        if proc.returncode != 0 or len(header) != 3 or header[0].decode() != sha:
            raise FlowNotFound(f"the cached checkout {checkout} lacks object {sha[:12]}")
        size = int(header[2])
        found[sha] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return found


class _Loader(importlib.abc.Loader):
    """Runs one module of a `Tree` from the commit's bytes (an `InspectLoader` in all but
    name: `get_source` and `get_data` serve the same bytes, for tracebacks and the code hash)."""

    def __init__(self, tree: Tree, rel: str | None, origin: str, package: bool) -> None:
        self.tree, self.rel, self.origin, self.package = tree, rel, origin, package

    def is_package(self, fullname: str) -> bool:
        return self.package

    def source_bytes(self) -> bytes:
        return self.tree.data(self.rel) if self.rel is not None else b""

    def get_source(self, fullname: str) -> str:
        return importlib.util.decode_source(self.source_bytes())

    def get_data(self, path: str) -> bytes:
        """A file of the flow at the commit, by its path in the checkout."""
        try:
            rel = Path(path).relative_to(self.tree.checkout).as_posix()
        except ValueError:
            raise OSError(f"{path} is not a file of the pinned flow") from None
        found = self.tree.resolve(rel)
        if found is None or not self.tree.is_file(found):
            raise FileNotFoundError(path)
        return self.tree.data(found)

    @property
    def path(self) -> str:
        return self.origin

    def get_resource_reader(self, fullname: str) -> FileReader | None:
        # importlib.resources reads a package's data files where `__file__` is, as before.
        return FileReader(self) if self.package and self.rel is not None else None  # type: ignore[arg-type]

    def exec_module(self, module: ModuleType) -> None:
        code = compile(self.source_bytes(), self.origin, "exec", dont_inherit=True)
        # Loading a flow runs its code (README, "Flows"): this is where, from the commit's bytes.
        exec(code, module.__dict__)  # noqa: S102


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the modules of imported trees (by their top-level name) and nothing else."""

    def __init__(self) -> None:
        self.trees: dict[str, Tree] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        top, _, rest = fullname.partition(".")
        tree = self.trees.get(top)
        if tree is None:
            return None
        if not tree.package:
            return None if rest else _spec(fullname, tree, tree.root, False)
        base = tree.resolve(_join(tree.root, rest.replace(".", "/")))
        if base is not None and tree.is_dir(base):
            init = tree.resolve(_join(base, "__init__.py"))
            if init is not None and tree.is_file(init):
                return _spec(fullname, tree, init, True)
            return _spec(fullname, tree, None, True, where=base)  # a namespace directory
        module = tree.resolve(_join(tree.root, rest.replace(".", "/")) + ".py")
        if module is not None and tree.is_file(module):
            return _spec(fullname, tree, module, False)
        return None


def _spec(
    name: str, tree: Tree, rel: str | None, package: bool, *, where: str = ""
) -> importlib.machinery.ModuleSpec:
    origin = str(tree.checkout / (rel if rel is not None else where))
    spec = importlib.util.spec_from_loader(
        name, _Loader(tree, rel, origin, package), origin=origin, is_package=package
    )
    assert spec is not None
    # `__file__` in the checkout; submodules come from this finder only (an empty `__path__`
    # leaves the checkout's own directory off every search).
    spec.has_location = rel is not None
    return spec


_FINDER = _Finder()


def import_tree(tree: Tree, shown: str) -> ModuleType:
    """Import the flow `tree` holds, from the commit's bytes (once per process and commit)."""
    key = f"{tree.checkout}\0{tree.root}"
    name = USER_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:16]
    loaded = sys.modules.get(name)
    if loaded is not None and name in _FINDER.trees:
        return loaded
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    _FINDER.trees[name] = tree
    try:
        return importlib.import_module(name)
    except IMPORT_FAILURES as exc:
        for stale in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[stale]
        del _FINDER.trees[name]
        raise FlowNotFound(f"flow {shown} failed to import: {first_line(exc)}") from exc
