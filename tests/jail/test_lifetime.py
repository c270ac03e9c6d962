"""No process of a jailed turn outlives it, and none can signal anything outside its turn.

Real processes through `procs.Proc` (as the engine starts agents) and `jail.wrap`. The daemon
here does everything the issue's hostile actor did: fork, setsid, ignore SIGTERM and re-exec
with an empty environment (so the engine's tracking token is gone). Without a jail it
survives its turn (the control case); in a jail it does not.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from flamechase import jail, procs
from flamechase.jail import JailSpec, Mode, ready
from tests.jail.attacks import attack, escaped
from tests.jail.conftest import (
    LANES,
    MODES,
    Grounds,
    lane_jail,
    lane_place,
    needs_bwrap,
    needs_scoping,
)

FAR = 60.0

DAEMON = r"""
import os, signal, sys, time
marker, beat, how = sys.argv[1], sys.argv[2], sys.argv[3]
LOOP = ("import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "while True:\n"
        "    open(sys.argv[2], 'a').write('.')\n"
        "    time.sleep(0.02)\n")
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.execve(sys.executable, [sys.executable, "-I", "-c", LOOP, marker, beat], {})
    os._exit(0)
os.waitpid(pid, 0)
while not os.path.exists(beat):
    time.sleep(0.01)
print("daemon started", flush=True)
if how == "stay":  # a turn that ignores SIGTERM and must be cut
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(1)
"""

TRAP = r"""
import signal, sys, time
def on_term(sig, frame):
    open(sys.argv[1], "w").write("TERM")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
while True:
    time.sleep(1)
"""


def _spec(g: Grounds, mode: Mode, lane: str = "lane-2") -> JailSpec:
    spec = lane_jail(
        mode,
        g.layout,
        lane,
        lanes=LANES,
        place=lane_place(g.layout, lane),
        turn_dir=g.turn_dir(lane),
        cli="exec",
        role=f"{lane}_actor_a",
        source=g.source,
        state_home=g.state_home,
    )
    ready(spec)
    return spec


def _marked(marker: str) -> list[int]:
    """Live processes whose command line carries `marker`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(name))
    return found


def _gone(marker: str, within: float = 20.0) -> list[int]:
    """Wait until no process carries `marker` (or `within` seconds pass); what is left."""
    end = time.monotonic() + within
    left = _marked(marker)
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = _marked(marker)
    return left


def _kill_marked(marker: str) -> None:
    for pid in _marked(marker):
        os.kill(pid, signal.SIGKILL)


async def _start(argv: list[str], spec: JailSpec) -> procs.Proc:
    return await procs.Proc.start(jail.wrap(argv, spec), cwd=spec.place, env=dict(os.environ))


async def _turn(spec: JailSpec, argv: list[str], *, cut: bool, grace: float) -> int | None:
    """Run `argv` as the engine runs a turn: wait for its first line, then either wait for
    it to exit or cut it; always end it. Its exit code, or None when cut."""
    proc = await _start(argv, spec)
    try:
        line = await proc.next_line(deadline=time.monotonic() + FAR, silence=FAR)
        assert line is not None, proc.stderr_tail()
        if cut:
            return None
        return await proc.wait_exit(deadline=time.monotonic() + FAR, silence=FAR)
    finally:
        await proc.kill(grace)
        # What the engine does after every turn: sweep the token for escaped descendants.
        reaper = procs.Reaper()
        reaper.later(proc.token, proc.since, grace)
        await reaper.settle()


def _daemon_argv(tmp: Path, how: str) -> tuple[str, list[str]]:
    marker = f"fc-daemon-{uuid.uuid4().hex}"
    return marker, [sys.executable, "-I", "-c", DAEMON, marker, str(tmp / "beat"), how]


@pytest.mark.parametrize("mode", MODES)
def test_a_scrubbed_setsid_daemon_dies_with_its_turn(grounds: Grounds, mode: Mode) -> None:
    spec = _spec(grounds, mode)
    marker, argv = _daemon_argv(spec.place, "exit")
    try:
        code = asyncio.run(_turn(spec, argv, cut=False, grace=1.0))
        assert code == 0
        assert _gone(marker) == []
    finally:
        _kill_marked(marker)


def test_without_a_jail_the_scrubbed_daemon_outlives_its_turn(grounds: Grounds) -> None:
    """The control case: what the jails above stop really escapes the engine's own tracking."""
    spec = _spec(grounds, "off")
    marker, argv = _daemon_argv(spec.place, "exit")
    try:
        assert asyncio.run(_turn(spec, argv, cut=False, grace=1.0)) == 0
        assert _marked(marker) != []
    finally:
        _kill_marked(marker)


@needs_bwrap
def test_a_cut_turn_deaf_to_sigterm_takes_its_daemon_down_under_bubblewrap(
    grounds: Grounds,
) -> None:
    spec = _spec(grounds, "bwrap")
    marker, argv = _daemon_argv(spec.place, "stay")
    try:
        assert asyncio.run(_turn(spec, argv, cut=True, grace=0.3)) is None
        assert _gone(marker) == []
    finally:
        _kill_marked(marker)


@pytest.mark.parametrize("mode", MODES)
def test_sigterm_reaches_the_jailed_agent_within_the_grace_period(
    grounds: Grounds, mode: Mode
) -> None:
    """The engine's TERM → grace → KILL still gives the agent its TERM first."""
    spec = _spec(grounds, mode)
    note = spec.place / "got-term"
    asyncio.run(_turn(spec, [sys.executable, "-I", "-c", TRAP, str(note)], cut=True, grace=FAR))
    assert note.read_text() == "TERM"


@pytest.mark.parametrize("mode", MODES)
def test_a_jailed_crash_is_reported_as_its_signal(grounds: Grounds, mode: Mode) -> None:
    spec = _spec(grounds, mode)
    argv = ["/bin/sh", "-c", "echo started; kill -SEGV $$"]
    code = asyncio.run(_turn(spec, argv, cut=False, grace=1.0))
    assert code is not None
    assert jail.decode_exit(code, spec) == -signal.SIGSEGV


@needs_bwrap
def test_a_resumed_engine_ends_a_jailed_tree_by_its_recorded_group(grounds: Grounds) -> None:
    spec = _spec(grounds, "bwrap")
    marker, argv = _daemon_argv(spec.place, "stay")

    async def crash_and_resume() -> list[int]:
        proc = await _start(argv, spec)
        try:
            assert await proc.next_line(deadline=time.monotonic() + FAR, silence=FAR)
            # What the engine recorded, all a resumed engine has to go on:
            procs.end_group_now(proc.pgid, proc.token)
            return _gone(marker)
        finally:
            await proc.kill(0.1)

    try:
        assert asyncio.run(crash_and_resume()) == []
    finally:
        _kill_marked(marker)


ENGINE = r"""
import subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, start_new_session=True)
sys.stdout.write(child.stdout.readline().decode())
sys.stdout.flush()
child.wait()
"""


@needs_bwrap
def test_a_jailed_tree_dies_with_a_killed_engine(grounds: Grounds) -> None:
    spec = _spec(grounds, "bwrap")
    marker, argv = _daemon_argv(spec.place, "stay")
    engine = subprocess.Popen(
        [sys.executable, "-I", "-c", ENGINE, *jail.wrap(argv, spec)],
        stdout=subprocess.PIPE,
        cwd=spec.place,
    )
    try:
        assert engine.stdout is not None
        assert engine.stdout.readline() == b"daemon started\n"
        engine.kill()
        engine.wait()
        assert _gone(marker) == []
    finally:
        _kill_marked(marker)


def _host_pid_of(ancestor: int, name: str, within: float = 20.0) -> int:
    """The pid (as this test sees it) of the descendant of `ancestor` running `name`."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        parents: dict[int, int] = {}
        comm: dict[int, str] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue
                comm[int(entry)] = stat[stat.index("(") + 1 : stat.rindex(")")]
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        for pid, c in comm.items():
            up = pid
            while c == name and up > 1:
                up = parents.get(up, 0)
                if up == ancestor:
                    return pid
        time.sleep(0.02)
    raise AssertionError(f"no {name} under {ancestor}")


@pytest.mark.parametrize(
    "mode",
    [pytest.param("bwrap", marks=needs_bwrap), pytest.param("landlock", marks=needs_scoping)],
)
def test_a_jailed_process_cannot_signal_the_engine_other_lanes_or_strangers(
    grounds: Grounds, mode: Mode
) -> None:
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)
    other_lane = subprocess.Popen(
        jail.wrap(["sleep", "300"], _spec(grounds, mode, "lane-3")),
        start_new_session=True,
        cwd=lane_place(grounds.layout, "lane-3"),
    )
    try:
        lane3_agent = _host_pid_of(other_lane.pid, "sleep")
        attempts = [
            # The engine (this test process): probed with signal 0, so a failed jail could
            # not take the test down with it.
            ("engine", "kill", str(os.getpid()), "0"),
            ("engine_group", "killpg", str(os.getpgid(0)), "0"),
            ("stranger", "kill", str(stranger.pid), ""),
            ("stranger_group", "killpg", str(stranger.pid), ""),
            ("lane3_agent", "kill", str(lane3_agent), ""),
            ("lane3_jail", "kill", str(other_lane.pid), ""),
            ("lane3_group", "killpg", str(other_lane.pid), ""),
        ]
        results = attack(_spec(grounds, mode), attempts)
        assert escaped(results) == {}, results
        assert stranger.poll() is None and other_lane.poll() is None
        os.kill(lane3_agent, 0)  # still there
    finally:
        for p in (stranger, other_lane):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@pytest.mark.parametrize("mode", MODES)
def test_a_jailed_program_starts_with_no_signal_ignored(tmp_path: Path, mode: Mode) -> None:
    """Python (the Landlock launcher) ignores SIGPIPE and SIGXFSZ, and bubblewrap's caller
    ignores SIGTERM; none of it reaches the agent: `yes | head -1` ends as it would outside."""
    spec = JailSpec(mode=mode, place=tmp_path, tmp=tmp_path)
    done = subprocess.run(
        jail.wrap(["grep", "SigIgn", "/proc/self/status"], spec),
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(done.stdout.split()[1], 16) == 0, done.stdout
