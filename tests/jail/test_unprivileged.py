"""The jails hold for an unprivileged user too, not only for root.

CI runs as root, and root takes other paths through both jails: bubblewrap needs no user
namespace for root (an ordinary user needs one, and some systems forbid them), and root's
metadata changes are refused by the read-only mount rather than by ownership. So these tests
drop to an unused uid with `setpriv` (no account is created: a bare uid is enough) and run
the same hostile actor, signals and daemon as that user, on files that user owns. When the
suite already runs unprivileged, every other jail test covers this and these skip.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flamechase import jail, procs
from flamechase.jail import JailSpec, Mode, ready
from tests.jail.attacks import attack, dir_attacks, escaped, file_attacks
from tests.jail.conftest import LANES, PROBE, Grounds, lane_jail, lane_place, make_grounds
from tests.jail.test_lifetime import _daemon_argv, _gone, _kill_marked

UID = 64_123  # unused here; setpriv needs no passwd entry for it
SETPRIV = shutil.which("setpriv")
DROP = [str(SETPRIV), f"--reuid={UID}", f"--regid={UID}", "--clear-groups"]
FAR = 60.0

pytestmark = [
    pytest.mark.skipif(
        os.geteuid() != 0, reason="the suite runs unprivileged already: every jail test is this"
    ),
    pytest.mark.skipif(SETPRIV is None, reason="setpriv (util-linux) is not installed"),
]


def _runs_as_user(argv: list[str]) -> str | None:
    """None when `argv` runs as the unprivileged user, else why not (one line)."""
    done = subprocess.run(
        [*DROP, *argv],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd="/",
    )
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["?"])[-1]


@pytest.fixture
def user_python(monkeypatch: pytest.MonkeyPatch) -> str:
    """A Python the user can run (this one may live in root's home), used by the jails."""
    for python in (sys.executable, "/usr/bin/python3"):
        # Through env, as the jails start it (setpriv's own exec is not a fair check).
        if _runs_as_user(["/usr/bin/env", python, "-I", "-c", "pass"]) is None:
            monkeypatch.setattr(sys, "executable", python)
            return python
    pytest.skip("no Python interpreter this test can run as an unprivileged user")


@pytest.fixture
def user_grounds(user_python: str) -> Iterator[Grounds]:
    root = Path(tempfile.mkdtemp(prefix="fc-unprivileged-", dir="/tmp"))
    try:
        g = make_grounds(root, root / "fc-home")
        (root / "home").mkdir()
        for dirpath, dirnames, filenames in os.walk(root):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.chown(name, UID, UID, follow_symlinks=False)
        yield g
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _modes() -> list[object]:
    bwrap_as_user = (
        _runs_as_user(
            [
                "bwrap",
                "--ro-bind",
                "/",
                "/",
                "--unshare-pid",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--",
                "true",
            ]
        )
        if PROBE.bwrap_ok and SETPRIV
        else "bubblewrap does not run here"
    )
    return [
        pytest.param(
            "bwrap",
            marks=pytest.mark.skipif(
                bwrap_as_user is not None, reason=f"unprivileged bubblewrap: {bwrap_as_user}"
            ),
        ),
        pytest.param(
            "landlock",
            marks=pytest.mark.skipif(not PROBE.landlock_ok, reason=str(PROBE.landlock_reason)),
        ),
    ]


MODES = _modes()


def _spec(g: Grounds, mode: Mode) -> JailSpec:
    spec = lane_jail(
        mode,
        g.layout,
        "lane-2",
        lanes=LANES,
        place=lane_place(g.layout, "lane-2"),
        turn_dir=g.turn_dir("lane-2"),
        cli="exec",
        role="lane_2_actor_a",
        source=g.source,
        state_home=g.state_home,
    )
    ready(spec)
    for path in (spec.tmp,):
        os.chown(path, UID, UID)
    return spec


def _env(g: Grounds) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(g.source.parent / "home")}


@pytest.mark.parametrize("mode", MODES)
def test_an_unprivileged_lane_jail_refuses_writes_and_metadata_changes(
    user_grounds: Grounds, mode: Mode
) -> None:
    g = user_grounds
    spec = _spec(g, mode)
    attempts = [
        ("own:place", "create", str(spec.place), "ok.txt"),
        *file_attacks("source", g.solver, spec.place),
        *dir_attacks("source_dir", g.source),
        *file_attacks("run.db", g.db, spec.place),
        *dir_attacks("run_dir", g.layout.root),
        *file_attacks("lane3", g.secret("lane-3"), spec.place),
    ]
    results = attack(spec, attempts, env=_env(g), prefix=DROP)
    assert results.pop("own:place") == "done"
    leaks = escaped(results)
    if mode == "landlock":  # owner's chmod/utime/xattr: Landlock's known gap
        leaks = {
            k: v
            for k, v in leaks.items()
            if k.rsplit(":", 1)[1] not in ("chmod", "chown", "utime", "xattr")
        }
    assert leaks == {}, leaks
    assert g.solver.read_text() == "def solve(): return 42\n"


@pytest.mark.parametrize(
    "mode", [m for m in MODES if PROBE.landlock_scopes or getattr(m, "values", [""])[0] == "bwrap"]
)
def test_an_unprivileged_jail_cannot_signal_the_users_other_processes(
    user_grounds: Grounds, mode: Mode
) -> None:
    stranger = subprocess.Popen([*DROP, "sleep", "300"], start_new_session=True)
    try:
        results = attack(
            _spec(user_grounds, mode),
            [
                ("stranger", "kill", str(stranger.pid), ""),
                ("stranger_group", "killpg", str(stranger.pid), ""),
            ],
            env=_env(user_grounds),
            prefix=DROP,
        )
        assert escaped(results) == {}, results
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.parametrize("mode", MODES)
def test_an_unprivileged_jails_scrubbed_daemon_dies_with_its_turn(
    user_grounds: Grounds, mode: Mode
) -> None:
    spec = _spec(user_grounds, mode)
    marker, argv = _daemon_argv(spec.place, "exit")

    async def turn() -> int:
        proc = await procs.Proc.start(
            [*DROP, *jail.wrap(argv, spec)], cwd=spec.place, env=_env(user_grounds)
        )
        try:
            assert await proc.next_line(deadline=time.monotonic() + FAR, silence=FAR), (
                proc.stderr_tail()
            )
            return await proc.wait_exit(deadline=time.monotonic() + FAR, silence=FAR)
        finally:
            await proc.kill(1.0)
            # What the engine does after every turn: sweep the token for escaped descendants.
        reaper = procs.Reaper()
        reaper.later(proc.token, proc.since, 1.0)
        await reaper.settle()

    try:
        assert asyncio.run(turn()) == 0
        assert _gone(marker) == []
    finally:
        _kill_marked(marker)
