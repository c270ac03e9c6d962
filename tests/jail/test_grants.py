"""What a JailSpec grants, made real: private /tmp and home, carved-out protected paths, and
the CLI state a jailed agent keeps writing."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from flamechase import jail
from flamechase.jail import JailSpec, Mode, needs_home, ready
from flamechase.jail.bwrap import bwrap_argv
from tests.jail.conftest import MODES, needs_bwrap


def _sh(spec: JailSpec, script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        jail.wrap(["/bin/sh", "-c", script], spec),
        cwd=spec.place,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def off_tmp() -> Iterator[Path]:
    """A directory outside /tmp (so the jail may replace /tmp)."""
    base = Path(tempfile.mkdtemp(prefix="fc-jail-", dir="/var/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@needs_bwrap
def test_under_bubblewrap_tmp_is_the_private_tmpdir(off_tmp: Path) -> None:
    place, tmp = off_tmp / "ws", off_tmp / "tmp"
    place.mkdir()
    spec = JailSpec(mode="bwrap", place=place, tmp=tmp)
    ready(spec)
    marker = f"fc-private-{os.getpid()}-{off_tmp.name}"
    done = _sh(spec, f"echo inside > /tmp/{marker} && ls /tmp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [marker]  # nothing of the real /tmp is visible
    assert (tmp / marker).read_text() == "inside\n"
    assert not Path("/tmp", marker).exists()


def test_tmp_is_kept_when_the_place_lives_under_it(tmp_path: Path) -> None:
    spec = JailSpec(mode="bwrap", place=tmp_path, tmp=tmp_path / "tmp")
    argv = bwrap_argv(["true"], spec)
    assert str(tmp_path / "tmp") not in argv[: argv.index("--chdir")]  # not bound over /tmp


@pytest.mark.parametrize("mode", MODES)
def test_a_protected_path_inside_a_grant_is_never_writable(tmp_path: Path, mode: Mode) -> None:
    outer = tmp_path / "outer"
    (outer / "inner").mkdir(parents=True)
    place = tmp_path / "ws"
    place.mkdir()
    spec = JailSpec(
        mode=mode, place=place, tmp=tmp_path / "t", grants=(outer,), protected=(outer / "inner",)
    )
    ready(spec)
    done = _sh(spec, f"echo x > {outer}/inner/f; echo x > {outer}/f; ls {outer}")
    assert not (outer / "inner" / "f").exists()
    # Bubblewrap carves the protected path out of the grant; Landlock cannot, so it drops
    # the whole grant instead.
    assert (outer / "f").exists() == (mode == "bwrap"), done.stderr


@pytest.mark.parametrize("mode", MODES)
def test_a_protected_file_cannot_be_moved_aside_by_renaming_a_directory_above_it(
    tmp_path: Path, mode: Mode
) -> None:
    place = tmp_path / "ws"
    (place / "gates" / "metrics").mkdir(parents=True)
    gate = place / "gates" / "metrics" / "check.py"
    gate.write_text("frozen\n")
    spec = JailSpec(mode=mode, place=place, tmp=tmp_path / "t", protected=(gate,))
    ready(spec)
    done = _sh(
        spec,
        "mv gates/metrics gates/old; mv gates g2; rm -rf gates;"
        " mkdir -p gates/metrics; echo fake > gates/metrics/check.py; cat gates/metrics/check.py;"
        " echo more > gates/new.txt",
    )
    assert gate.read_text() == "frozen\n", done.stdout + done.stderr
    assert done.stdout.splitlines()[:1] == ["frozen"]
    assert not (place / "g2").exists() and not (place / "gates" / "old").exists()
    # Bubblewrap keeps the rest of the place writable; Landlock cannot carve a file out of a
    # grant, so the whole place is read-only.
    assert (place / "gates" / "new.txt").exists() == (mode == "bwrap"), done.stderr


@pytest.mark.parametrize("mode", MODES)
def test_a_cli_with_a_dotfile_in_home_rewrites_it_in_its_private_home(
    tmp_path: Path, mode: Mode, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real-home"
    (real / ".claude").mkdir(parents=True)
    (real / ".claude.json").write_text('{"n": 1}\n')
    monkeypatch.setenv("HOME", str(real))
    state = (real / ".claude", real / ".claude.json", real / ".cache" / "claude-cli")
    assert needs_home(state) and not needs_home(state[:1])
    place = tmp_path / "ws"
    place.mkdir()
    spec = JailSpec(
        mode=mode,
        place=place,
        tmp=tmp_path / "t",
        state=state,
        home=tmp_path / "homes" / "lane_2_actor_a",
        user_home=real,
    )
    ready(spec)
    # What claude does: its state directory written in place, its dotfile replaced by rename.
    done = _sh(
        spec,
        'echo session > "$HOME/.claude/s" && echo cache > "$HOME/.cache/claude-cli/c"'
        ' && echo \'{"n": 2}\' > "$HOME/.claude.json.tmp"'
        ' && mv "$HOME/.claude.json.tmp" "$HOME/.claude.json"'
        f" && echo $HOME && (echo x > {real}/elsewhere || true)",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == str(spec.home)
    assert (real / ".claude" / "s").read_text() == "session\n"  # the real state directory
    assert (real / ".cache" / "claude-cli" / "c").read_text() == "cache\n"  # made by ready()
    assert (real / ".claude.json").read_text() == '{"n": 1}\n'  # the user's own, untouched
    assert (spec.home / ".claude.json").read_text() == '{"n": 2}\n'
    assert not (real / "elsewhere").exists()


def test_the_writable_roots_are_the_outermost_existing_grants(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    spec = JailSpec(
        mode="landlock",
        place=tmp_path / "ws",
        tmp=tmp_path,
        grants=(tmp_path / "ws", tmp_path / "missing"),
    )
    assert spec.writable() == (tmp_path,)
    assert spec.confined and not JailSpec(mode="off", place=tmp_path, tmp=tmp_path).confined


def test_a_spec_is_a_value_that_pickles(tmp_path: Path) -> None:
    import pickle

    spec = JailSpec(mode="bwrap", place=tmp_path, tmp=tmp_path, hidden=(tmp_path / "h",))
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert jail.wrap(["true"], None) == ["true"]
    assert jail.wrap(["true"], JailSpec(mode="off", place=tmp_path, tmp=tmp_path)) == ["true"]


@pytest.mark.parametrize("mode", MODES)
def test_a_program_its_jail_cannot_run_is_told_from_one_that_ran_and_failed(
    off_tmp: Path, mode: Mode
) -> None:
    place = off_tmp / "ws"
    place.mkdir()
    spec = JailSpec(mode=mode, place=place, tmp=off_tmp / "tmp")
    ready(spec)
    broken = off_tmp / "broken.sh"  # its interpreter is gone: the launcher cannot exec it
    broken.write_text("#!/nonexistent/interpreter\n")
    liar = off_tmp / "liar.sh"  # runs, and says what a launcher would, among other things
    liar.write_text(
        f"#!/bin/sh\necho started >&2\necho '/usr/bin/env: {liar}: gone' >&2\nexit 127\n"
    )
    for p in (broken, liar):
        p.chmod(0o755)

    def run(program: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            jail.wrap([str(program)], spec), cwd=place, capture_output=True, text=True,
            timeout=60, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    never = run(broken)
    said = jail.not_started(never.returncode, never.stderr, str(broken), spec)
    assert said is not None and str(broken) in said
    ran = run(liar)
    assert ran.returncode == 127
    assert jail.not_started(ran.returncode, ran.stderr, str(liar), spec) is None
