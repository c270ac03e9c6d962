"""Hostile lanes through the real CLI, under bubblewrap and under the Landlock fallback.

parallel_flame_chase with lane 1 well behaved and lanes 2 and 3 attackers (today's engine
jails lanes 2..N; the jails of lane 1 and the coordinator are tested directly against
`jail.wrap` in test_roles.py). Each attacker tries every content and metadata trick on the
source, the run store, the blob store and the other lanes, reads the other attacker's copy,
signals the engine and lane 1's agent, and leaves a daemon that clears its environment.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from flamechase import jail
from flamechase.engine.invariants import check_run
from flamechase.engine.layout import RunLayout
from flamechase.jail import Mode, ready
from tests.helpers import FLAMECHASE, events, status
from tests.jail.attacks import METADATA_OPS, OPS, dir_attacks, escaped, file_attacks
from tests.jail.conftest import lane_jail, needs_bwrap, needs_landlock, needs_scoping
from tests.jail.test_lifetime import DAEMON, _gone, _kill_marked
from tests.test_hostile_agents import HEAD, _attempts, _run, _run_dir, _source, _tree

MODES = [pytest.param("bwrap", marks=needs_bwrap), pytest.param("landlock", marks=needs_landlock)]

FILES = (
    OPS
    + r"""
other = "lane-3" if lane == "lane-2" else "lane-2"
if turn == 1:
    text = E["ATTEMPTS"].replace("{run}", run_dir).replace("{ws}", ws).replace("{other}", other)
    for key, value in try_all(json.loads(text)).items():
        note(key, value)
    progress()
else:
    done()
"""
)


def _file_attempts(src: Path) -> list[tuple[str, str, str, str]]:
    run, ws, other = Path("{run}"), Path("{ws}"), "{other}"
    return [
        *file_attacks("source", src / "secret.txt", ws),
        *dir_attacks("source_dir", src),
        *dir_attacks("source_pkg", src / "pkg"),
        *file_attacks("run.db", run / "run.db", ws),
        *dir_attacks("run_dir", run),
        *dir_attacks("blobs", run / "blobs"),
        *dir_attacks("lane1_dir", run / "lanes/lane-1"),
        *file_attacks("other_copy", run / "lanes" / other / "workspace/secret.txt", ws),
        ("read:other_copy", "read", str(run / "lanes" / other / "workspace/secret.txt"), ""),
        ("list:other_copy", "read", str(run / "lanes" / other / "workspace"), ""),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_hostile_lanes_change_nothing_outside_their_copies(
    tmp_path: Path, state_home: Path, mode: Mode
) -> None:
    src = _source(tmp_path)
    before = _tree(src)
    proc = _run(
        tmp_path,
        src,
        FILES,
        params=f",sandbox={mode}",
        attackers=2,
        env={"ATTEMPTS": json.dumps(_file_attempts(src))},
    )
    assert proc.returncode == 3, proc.stderr
    run_dir = _run_dir(state_home, src)
    tried = _attempts(run_dir, "lane-2")
    assert len(tried) == len(_file_attempts(src))
    leaks = escaped(tried)
    if mode == "landlock":  # what jail.coverage says Landlock leaves open
        leaks = {
            k: v
            for k, v in leaks.items()
            if k.rsplit(":", 1)[-1] not in METADATA_OPS and not k.startswith(("read:", "list:"))
        }
    assert leaks == {}, leaks
    assert _tree(src) == before
    assert check_run(run_dir) == []
    notices = [e["payload"]["message"] for e in events(src) if e["kind"] == "notice"]
    assert any(("bubblewrap jail" if mode == "bwrap" else "Landlock jail") in n for n in notices), (
        notices
    )


LANE_ONE = r"""#!/bin/bash
if [ -z "$FLAMECHASE_LANE" ]; then
  sep=; printf '{"lanes":[' > "$FLAMECHASE_REPORT"
  for l in ${FLAMECHASE_LANES//,/ }; do
    printf '%s{"lane":"%s","mission":{"title":"t","objective":"o","success_criteria":["c"]}}' \
      "$sep" "$l" >> "$FLAMECHASE_REPORT"; sep=,
  done
  printf ']}' >> "$FLAMECHASE_REPORT"; exit 0
fi
if [ -e "$FLAMECHASE_RUN_DIR/lanes/lane-2/DONE" ]; then
  echo '{"status":"blocked","summary":"the attacker is done"}' > "$FLAMECHASE_REPORT"; exit 0
fi
# Be there to be attacked (the test tells the attacker our pid as the host sees it: in our
# own PID namespace we cannot know it), then wait (bounded) for the attack to be over.
for i in $(seq 200); do
  [ -e "$FLAMECHASE_RUN_DIR/lanes/lane-2/ATTACKED" ] && break; sleep 0.05
done
echo '{"status":"progress","summary":"lane 1 lived through it"}' > "$FLAMECHASE_REPORT"
"""

SIGNALS = (
    OPS
    + r"""
def wait_for(path):
    for _ in range(400):
        if os.path.exists(path):
            return open(path).read().strip()
        time.sleep(0.05)
    raise SystemExit(f"never appeared: {path}")
if turn == 1:
    pids = E["PIDS"]
    engine, lane1 = int(wait_for(pids + "/engine")), int(wait_for(pids + "/lane1"))
    for key, value in try_all([
            ("engine", "kill", str(engine), ""), ("engine_group", "killpg", str(engine), ""),
            ("lane1_agent", "kill", str(lane1), ""),
            ("lane1_group", "killpg", str(lane1), "")]).items():
        note(key, value)
    subprocess.run([sys.executable, "-I", "-c", E["DAEMON"], E["MARKER"],
                    os.path.join(ws, "beat"), "exit"], check=True, stdout=subprocess.DEVNULL)
    open(os.path.join(run_dir, "lanes", lane, "ATTACKED"), "w").write("1")
    progress()
else:
    done()
"""
)


def _host_pid_of(script: Path, timeout: float) -> int:
    """The host pid of the shell running `script` in a lane-1 turn (not its jail's wrappers)."""
    import time as _time

    end = _time.monotonic() + timeout
    while _time.monotonic() < end:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                env = (entry / "environ").read_bytes()
            except OSError:
                continue
            if (
                str(script).encode() in argv
                and b"FLAMECHASE_LANE=lane-1" in env
                and not argv[0].endswith((b"bwrap", b"env"))
            ):
                return int(entry.name)
        _time.sleep(0.05)
    raise AssertionError(f"no lane-1 turn of {script} appeared")


@pytest.mark.parametrize(
    "mode",
    [pytest.param("bwrap", marks=needs_bwrap), pytest.param("landlock", marks=needs_scoping)],
)
def test_a_hostile_lane_cannot_kill_the_engine_or_lane_one_nor_leave_a_daemon(
    tmp_path: Path, state_home: Path, mode: Mode
) -> None:
    src = _source(tmp_path)
    pids = tmp_path / "pids"
    pids.mkdir()
    one, two = tmp_path / "lane1.sh", tmp_path / "attacker.py"
    one.write_text(LANE_ONE)
    two.write_text(HEAD + SIGNALS)
    for script in (one, two):
        script.chmod(0o755)
    marker = f"fc-daemon-{uuid.uuid4().hex}"
    env = dict(os.environ, SRC=str(src), PIDS=str(pids), DAEMON=DAEMON, MARKER=marker)
    argv = [
        *FLAMECHASE,
        "exec",
        "-f",
        "parallel_flame_chase",
        "-a",
        f"coordinator=exec:{one}",
        "-a",
        f"lane_1_actor_a=exec:{one},lane_1_actor_b=exec:{one}",
        "-a",
        f"lane_2_actor_a=exec:{two},lane_2_actor_b=exec:{two}",
        "-p",
        f"lanes=2,budget.turns=40,rest_seconds=0.05,turn_timeout=60,sandbox={mode}",
        "hostile agents",
    ]
    engine = subprocess.Popen(
        argv,
        cwd=src,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        (pids / "engine.tmp").write_text(str(engine.pid))
        (pids / "engine.tmp").rename(pids / "engine")
        lane1 = _host_pid_of(one, timeout=60)
        (pids / "lane1.tmp").write_text(str(lane1))
        (pids / "lane1.tmp").rename(pids / "lane1")
        _, err = engine.communicate(timeout=120)
        assert engine.returncode == 3, err  # every lane held: the attacker finished
        tried = _attempts(_run_dir(state_home, src))
        assert set(tried) == {"engine", "engine_group", "lane1_agent", "lane1_group"}
        assert escaped(tried) == {}, tried
        lane1 = [
            e
            for e in events(src)
            if e["lane"] == "lane-1" and e["kind"] in ("turn_valid", "turn_failed")
        ]
        assert lane1 and all(e["kind"] == "turn_valid" for e in lane1), lane1
        assert status(src)["status"] == "held"
        assert _gone(marker) == []
    finally:
        if engine.poll() is None:
            engine.send_signal(signal.SIGKILL)
            engine.wait()
        _kill_marked(marker)


def test_without_a_jail_the_engine_still_starts_with_its_reason_said(
    tmp_path: Path, state_home: Path
) -> None:
    """sandbox=off runs, and says at the start what that leaves open."""
    src = _source(tmp_path)
    proc = _run(tmp_path, src, "done()\n", params=",sandbox=off")
    assert proc.returncode == 3, proc.stderr
    notices = [e["payload"]["message"] for e in events(src) if e["kind"] == "notice"]
    assert any(
        n.startswith("every agent and measurement: no jail (sandbox=off)") for n in notices
    ), notices


DELIVER = r"""
if turn == 1:
    os.makedirs(os.path.join(art, "pkg"), exist_ok=True)
    open(os.path.join(art, "pkg", "fix.py"), "w").write("FIX = 1\n")
    deliver(["pkg/fix.py"])
else:
    done()
"""


@pytest.mark.parametrize("mode", MODES)
def test_lane_one_integrates_an_artifact_from_inside_its_jail(
    tmp_path: Path, state_home: Path, mode: Mode
) -> None:
    """What the new engine's lane 1 does under its jail: read the run store and the frozen
    blobs (read-only to it) and extract a package into the source (its place)."""
    src = _source(tmp_path)
    proc = _run(tmp_path, src, DELIVER, params=",sandbox=off")
    assert proc.returncode == 3, proc.stderr
    run_dir = _run_dir(state_home, src)
    report = next(
        e["payload"]["report_id"]
        for e in events(src)
        if e["kind"] == "report_published" and e["lane"] == "lane-2"
    )
    layout = RunLayout(run_dir)
    spec = lane_jail(
        mode,
        layout,
        "lane-1",
        lanes=("lane-1", "lane-2"),
        place=src,
        turn_dir=layout.turn_dir("lane-1", 1, 1),
        cli="exec",
        role="lane_1_actor_a",
        source=src,
        state_home=state_home,
    )
    ready(spec)
    argv = [*FLAMECHASE, "artifacts", run_dir.name, report, "--extract", str(src / "got")]
    done = subprocess.run(
        jail.wrap(argv, spec),
        cwd=src,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert (src / "got" / "pkg" / "fix.py").read_text() == "FIX = 1\n"
