"""parallel_flame_chase artifact packages: checked, hashed and frozen at publication; rebuilt
with `flamechase artifacts RUN [REPORT_ID] --extract DIR`, verified on the way out.
"""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import pytest

from tests.flows.pfc import Team, of_kind, run_dir, turn_events
from tests.helpers import cli, events

V1 = "first version of the notes\n"
DATA = bytes(range(256)) * 40


@pytest.fixture
def ws(source_tree: Path) -> Path:
    return source_tree


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def published(ws: Path, tmp_path: Path) -> tuple[Team, str]:
    """A run where lane 2 publishes a package, then edits the files; lane 1 integrates it."""
    team = Team(
        tmp_path / "team",
        f"""
        if c.lane == "lane-2":
            if c.turn == 1:
                return c.deliver({{"notes.md": {V1!r}, "sub/data.bin": {DATA!r}}})
            if c.turn == 2:
                (c.art / "notes.md").write_text("edited after publication")
                (c.art / "sub" / "data.bin").unlink()
                return None
            return c.ok("blocked", "stop here")
        if c.lane == "lane-1":
            if c.turn == 1:
                c.wait(lambda _: c.started("lane-2", 3))
                return None
            for d in c.inbox:
                for a in d["report"].get("artifacts", []):
                    blob = Path(a["blob"])
                    (c.ws / "integrated").mkdir(exist_ok=True)
                    (c.ws / "integrated" / a["path"].replace("/", "_")).write_bytes(
                        blob.read_bytes())
                    c.save("seen-artifact.json", json.dumps(a))
            return c.ok("blocked", "integrated lane-2's package")
        return c.ok("blocked", "stop here")
    """,
    )
    assert team.run(ws).returncode == 3
    rid = next(
        e["payload"]["report_id"]
        for e in of_kind(events(ws), "report_published")
        if e["lane"] == "lane-2"
    )
    return team, rid


def test_a_package_is_frozen_at_publication(
    ws: Path, state_home: Path, published: tuple[Team, str]
) -> None:
    team, rid = published
    root = run_dir(state_home, ws)
    ev = next(
        e for e in of_kind(events(ws), "report_published") if e["payload"]["report_id"] == rid
    )
    assert ev["payload"]["artifacts"] == [
        {"path": "notes.md", "sha256": _sha(V1.encode()), "size": len(V1)},
        {"path": "sub/data.bin", "sha256": _sha(DATA), "size": len(DATA)},
    ]
    # What lane 1 received: path, size, sha256, description and the frozen blob.
    seen = json.loads(team.saved("seen-artifact.json"))
    assert set(seen) == {"path", "size", "sha256", "description", "blob"}
    for name, content in (("notes.md", V1.encode()), ("sub_data.bin", DATA)):
        assert (ws / "integrated" / name).read_bytes() == content
    # The store keeps the published bytes, read-only, whatever happened to the originals.
    assert (root / "lanes/lane-2/artifacts/notes.md").read_text() == "edited after publication"
    blob = root / "blobs" / "sha256" / _sha(V1.encode())[:2] / _sha(V1.encode())[2:]
    assert blob.read_text() == V1
    assert stat.S_IMODE(blob.stat().st_mode) & 0o222 == 0
    listed = json.loads(cli("artifacts", "last", "--json", cwd=ws, check=True).stdout)
    assert list(listed) == [rid]
    assert [f["path"] for f in listed[rid]] == ["notes.md", "sub/data.bin"]


def test_extract_rebuilds_one_or_every_package(
    ws: Path, tmp_path: Path, published: tuple[Team, str]
) -> None:
    _, rid = published
    one = tmp_path / "one"
    proc = cli("artifacts", "last", rid, "--extract", str(one), cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert (one / "notes.md").read_text() == V1
    assert (one / "sub" / "data.bin").read_bytes() == DATA
    every = tmp_path / "every"
    proc = cli("artifacts", "last", "--extract", str(every), cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert (every / rid / "notes.md").read_text() == V1
    assert sorted(p.name for p in every.iterdir()) == [rid]
    assert (
        cli("artifacts", "last", "nope", "--extract", str(tmp_path / "x"), cwd=ws).returncode == 2
    )


def test_extract_refuses_a_tampered_blob_and_writes_nothing(
    ws: Path, tmp_path: Path, state_home: Path, published: tuple[Team, str]
) -> None:
    _, rid = published
    sha = _sha(DATA)
    blob = run_dir(state_home, ws) / "blobs" / "sha256" / sha[:2] / sha[2:]
    blob.parent.chmod(0o700)
    blob.chmod(0o600)
    blob.write_bytes(DATA[:-1] + b"X")
    dest = tmp_path / "dest"
    proc = cli("artifacts", "last", rid, "--extract", str(dest), cwd=ws)
    assert proc.returncode == 1
    assert "sub/data.bin" in proc.stderr and "does not match" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not dest.exists() or not any(dest.rglob("*"))


def test_extract_never_writes_outside_the_directory(
    ws: Path, tmp_path: Path, published: tuple[Team, str]
) -> None:
    _, rid = published
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "sub").symlink_to(outside)
    proc = cli("artifacts", "last", rid, "--extract", str(dest), cwd=ws)
    assert proc.returncode == 1
    assert "sub" in proc.stderr
    assert list(outside.iterdir()) == []
    assert not (dest / "notes.md").exists()
    # A linked DIR is refused as well.
    linked = tmp_path / "linked"
    linked.symlink_to(outside)
    assert cli("artifacts", "last", rid, "--extract", str(linked), cwd=ws).returncode == 1
    assert list(outside.iterdir()) == []


# Each case: (files to create under the artifact root, the declared paths, a fragment of the
# one-line reason). `{outside}` is a directory outside the root.
REFUSALS = {
    "absolute": ({}, ["/etc/hostname"], "absolute"),
    "dot-dot": ({"a.txt": "x"}, ["sub/../../a.txt"], ".."),
    "NUL": ({"a.txt": "x"}, ["a\u0000.txt"], "NUL"),
    "backslash": ({"a.txt": "x"}, ["sub\\a.txt"], "backslash"),
    "trailing slash": ({"d/a.txt": "x"}, ["d/"], "directory"),
    "symlink on the path": ({"LINKDIR": "{outside}"}, ["escape/secret.txt"], "symlink"),
    "symlink file": ({"LINKFILE": "a.txt", "a.txt": "x"}, ["ln.txt"], "symbolic link"),
    "directory": ({"d/a.txt": "x"}, ["d"], "directory"),
    "missing": ({}, ["missing.txt"], "missing"),
    "over 64 MiB": ({"SPARSE": ""}, ["big.bin"], "exceeds 67108864"),
    "repeated": ({"a.txt": "x"}, ["a.txt", "a.txt"], "twice"),
    "empty component": ({"a.txt": "x"}, ["sub//a.txt"], "empty"),
}


def test_artifact_paths_are_refused_one_turn_at_a_time(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not for lanes")
    cases = sorted(REFUSALS)
    lanes = 6
    setup = {
        case: {
            k: (v.replace("{outside}", str(outside)) if isinstance(v, str) else v)
            for k, v in REFUSALS[case][0].items()
        }
        for case in cases
    }
    # Lane k takes cases k and k+6 on turns 1 and 3; valid turns in between.
    team = Team(
        tmp_path / "team",
        f"""
        cases = {cases!r}
        setup = {setup!r}
        paths = {{k: v[1] for k, v in {REFUSALS!r}.items()}}
        if c.turn >= 4:
            return c.ok("blocked", "stop here")
        if c.turn == 2:
            return None
        case = cases[int(c.lane.split("-")[1]) - 1 + {lanes} * (c.turn // 2)]
        files = {{}}
        for name, content in setup[case].items():
            if name == "LINKDIR":
                os.symlink(content, c.art / "escape")
            elif name == "LINKFILE":
                os.symlink(content, c.art / "ln.txt")
            elif name == "SPARSE":
                with open(c.art / "big.bin", "wb") as f:
                    f.truncate(64 * 1024 * 1024 + 1)
            else:
                files[name] = content
        return c.deliver(files, paths=paths[case])
    """,
    )
    assert team.run(ws, f"lanes={lanes}").returncode == 3
    evs = events(ws)
    for n, case in enumerate(cases):
        lane, turn = f"lane-{n % lanes + 1}", 2 * (n // lanes) + 1
        ev = next(e for e in turn_events(evs, lane) if e["payload"]["turn"] == turn)
        assert ev["kind"] == "turn_failed", case
        error = ev["payload"]["error"]
        assert REFUSALS[case][2] in error, (case, error)
        assert "\n" not in error
    for n in range(1, lanes + 1):
        assert [e["kind"] for e in turn_events(evs, f"lane-{n}")] == [
            "turn_failed",
            "turn_valid",
        ] * 2
    # Nothing of a refused deliverable was recorded or frozen.
    assert json.loads(cli("artifacts", "last", "--json", cwd=ws, check=True).stdout) == {}
    assert (outside / "secret.txt").read_text() == "not for lanes"
    assert not list(tmp_path.rglob("*.part"))
