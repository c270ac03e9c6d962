"""Hostile agents: every attempt is refused or detected; nothing is written or read for them.

Issue 6, point 4. Through the real CLI: parallel_flame_chase, lane 1 a well-behaved `exec:`
actor working in the source tree, lane 2 an attacker. Link and race attempts run with
`-p sandbox=off`, so what is tested is the runtime's own checks (control-path guards,
no-follow reads, no-follow writes); the rest run under the default sandbox as users do.

An attacker that finishes its attempts writes DONE in its lane directory (visible to lane 1,
unlike its jailed copy) and reports `blocked`;
lane 1 then reports `blocked` too, so the run ends "held" (exit 3) as soon as the attempts
are over.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from flamechase.engine.invariants import check_run
from flamechase.jail import probe
from tests.helpers import cli, events, status

SECRET = "SOURCE SECRET 7f3a"  # in the user's tree; must never reach the blob store
JAILS = probe()  # sandbox=auto: bubblewrap where it runs, else Landlock
needs_jail = pytest.mark.skipif(
    not (JAILS.bwrap_ok or JAILS.landlock_ok),
    reason="no jail runs here (neither bubblewrap nor Landlock)",
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
done=$(ls "$FLAMECHASE_RUN_DIR"/lanes/*/DONE 2>/dev/null | wc -l)
if [ "$done" -ge "${ATTACKERS:-1}" ]; then
  echo '{"status":"blocked","summary":"the attackers are done"}' > "$FLAMECHASE_REPORT"; exit 0
fi
sleep 0.1
echo '{"status":"progress","summary":"lane 1 did a turn"}' > "$FLAMECHASE_REPORT"
"""

# What every attacker starts with (python: links, FIFOs, sockets and sqlite are one call).
HEAD = r"""#!/usr/bin/env python3
import hashlib, json, os, socket, sqlite3, stat, subprocess, sys, time
E = os.environ
lane, turn = E["FLAMECHASE_LANE"], int(E["FLAMECHASE_TURN"])
attempt = int(E["FLAMECHASE_ATTEMPT"])
run_dir, ws = E["FLAMECHASE_RUN_DIR"], E["FLAMECHASE_WORKSPACE"]
art, cp, src = E["FLAMECHASE_ARTIFACTS"], E["FLAMECHASE_CHECKPOINT"], E["SRC"]

def report(obj):
    with open(E["FLAMECHASE_REPORT"], "w") as f:
        f.write(json.dumps(obj))

def progress(summary="attacker did a turn"):
    report({"status": "progress", "summary": summary})

def done():
    open(os.path.join(run_dir, "lanes", lane, "DONE"), "w").write("1")
    report({"status": "blocked", "summary": "no more attempts"})

def deliver(paths, submission=None):
    out = {"status": "deliverable_ready", "summary": "package",
           "deliverable": {"title": "p", "integration_notes": "n",
                           "artifacts": [{"path": p} for p in paths]}}
    if submission is not None:
        out["submission"] = submission
    report(out)

def note(key, value):
    path = os.path.join(ws, "attempts.json")
    data = json.load(open(path)) if os.path.exists(path) else {}
    data[key] = value
    open(path, "w").write(json.dumps(data))

def clear(path):
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass

def attempt_write(key, fn):
    try:
        fn()
        note(key, "wrote")
    except Exception as exc:
        note(key, f"refused: {exc}")
"""


def _tree(root: Path) -> dict[str, bytes | str]:
    """Everything under `root`: file bytes, link targets, directory markers."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = p.read_bytes()
    return out


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "secret.txt").write_text(SECRET + "\n")
    (src / "pkg" / "secret.txt").write_text(SECRET + " in pkg\n")
    (src / "bench.sh").write_text("echo SCORE: 5\n")
    return src


def _run(
    tmp_path: Path,
    src: Path,
    body: str,
    *,
    params: str = "",
    timeout: float = 90,
    attackers: int = 1,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Lane 1 well behaved, lanes 2..attackers+1 the attacker `HEAD + body`."""
    one = tmp_path / "lane1.sh"
    one.write_text(LANE_ONE)
    one.chmod(0o755)
    two = tmp_path / "attacker.py"
    two.write_text(HEAD + body)
    two.chmod(0o755)
    agents = [
        "-a",
        f"coordinator=exec:{one}",
        "-a",
        f"lane_1_actor_a=exec:{one},lane_1_actor_b=exec:{one}",
    ]
    for n in range(2, attackers + 2):
        agents += ["-a", f"lane_{n}_actor_a=exec:{two},lane_{n}_actor_b=exec:{two}"]
    return cli(
        "exec",
        "-f",
        "parallel_flame_chase",
        *agents,
        "-p",
        f"lanes={attackers + 1},budget.turns=200,rest_seconds=0.05,turn_timeout=30,"
        f"silence_timeout=15{params}",
        "hostile agents",
        cwd=src,
        timeout=timeout,
        env={"SRC": str(src), "ATTACKERS": str(attackers), **(env or {})},
    )


def _run_dir(state_home: Path, src: Path) -> Path:
    return state_home / "runs" / status(src)["id"]


def _attempts(run_dir: Path, lane: str = "lane-2") -> dict[str, str]:
    result: dict[str, str] = json.loads(
        (run_dir / "lanes" / lane / "workspace" / "attempts.json").read_text()
    )
    return result


def _blobs(run_dir: Path) -> list[bytes]:
    return [
        p.read_bytes() for p in (run_dir / "blobs").rglob("*") if p.is_file() and not p.is_symlink()
    ]


def _lane2_turns(evs: list[dict[str, Any]], lane: str = "lane-2") -> list[dict[str, Any]]:
    return [e for e in evs if e["lane"] == lane and e["kind"] in ("turn_valid", "turn_failed")]


# ---- control paths replaced by links -------------------------------------------------------------

REPLACE = r"""
target = {"source": src, "etc": "/etc"}[E["TARGET_KIND"]]
victim = {"workspace": ws, "artifacts": art}[E["VICTIM"]]
if turn == 1:
    os.rename(victim, victim + ".moved")
    os.symlink(target, victim)
progress()
"""


@pytest.mark.parametrize(
    ("victim", "target", "sandbox"),
    [
        ("workspace", "source", "off"),
        ("workspace", "etc", "off"),
        ("artifacts", "source", "off"),
        ("artifacts", "etc", "off"),
        pytest.param("workspace", "source", "auto", marks=needs_jail),
    ],
)
def test_control_path_swapped_for_a_link_stops_the_run(
    tmp_path: Path, state_home: Path, victim: str, target: str, sandbox: str
) -> None:
    src = _source(tmp_path)
    before = _tree(src)
    proc = _run(
        tmp_path,
        src,
        REPLACE,
        params=f",sandbox={sandbox}",
        env={"VICTIM": victim, "TARGET_KIND": target},
    )
    assert proc.returncode == 1, proc.stderr
    st = status(src)
    assert st["status"] == "failed"
    where = {"workspace": "lanes/lane-2/workspace", "artifacts": "lanes/lane-2/artifacts"}[victim]
    assert where in st["last_error"] and "replaced or linked" in st["last_error"]
    assert where in proc.stderr
    assert _tree(src) == before  # nothing was written into the link's target
    assert [e["kind"] for e in events(src)][-1] == "run_failed"


CHECKPOINT = r"""
ident = {"run_id": E["FLAMECHASE_RUN_ID"], "lane": lane, "turn": turn, "attempt": attempt,
         "phase": "terminal"}
forged = {"identity": ident, "report": {"status": "progress", "summary": "FROM CHECKPOINT"}}
if E["LINKED"] == "1":
    planted = os.path.join(src, "planted-checkpoint.json")  # the user's tree
    open(planted, "w").write(json.dumps(forged))
    clear(cp)
    os.symlink(planted, cp)
else:
    open(cp, "w").write(json.dumps(forged))
done() if turn > 1 else sys.exit(0)  # turn 1: die without a report, leaving the checkpoint
"""


@pytest.mark.parametrize("linked", [True, False], ids=["linked", "regular"])
def test_checkpoint_through_a_link_is_ignored(
    tmp_path: Path, state_home: Path, linked: bool
) -> None:
    src = _source(tmp_path)
    proc = _run(
        tmp_path, src, CHECKPOINT, params=",sandbox=off", env={"LINKED": "1" if linked else "0"}
    )
    lane2 = _lane2_turns(events(src))
    if linked:
        # The linked checkpoint never counted: turn 1 failed.
        assert proc.returncode == 3, proc.stderr
        assert lane2[0]["kind"] == "turn_failed"
        assert "no report was written" in lane2[0]["payload"]["error"]
    else:
        # The control: the same checkpoint as a regular file recovers the turn.
        assert proc.returncode == 3, proc.stderr
        assert lane2[0]["kind"] == "turn_valid"
        assert lane2[0]["payload"]["recovered_from_checkpoint"] is True


# ---- artifacts declared through links, odd paths and odd files ---------------------------------

DECLARE = r"""
ATTACKS = [
    ("symlink_to_source_file", "leak.txt",
     lambda p: os.symlink(os.path.join(src, "secret.txt"), p)),
    ("symlinked_directory", "srcdir/secret.txt",
     lambda p: os.symlink(src, os.path.join(art, "srcdir"))),
    ("dotdot", "../workspace/notes.txt", None),
    ("absolute", os.path.join(src, "secret.txt"), None),
    ("nul_byte", "a\u0000b.txt", None),
    ("backslash", "sub\\secret.txt", None),
    ("device_via_symlink", "null.txt", lambda p: os.symlink("/dev/null", p)),
    ("fifo", "pipe.txt", lambda p: os.mkfifo(p)),
    ("socket", "sock.txt",
     lambda p: (os.chdir(art), socket.socket(socket.AF_UNIX).bind("sock.txt"))),
    ("directory", "dir.txt", lambda p: os.mkdir(p)),
    ("over_64_mib", "big.bin", lambda p: open(p, "wb").truncate(100 * 1024 * 1024)),
    ("missing", "nope.txt", None),
]
try:  # a real device node where the container allows it
    os.mknod(os.path.join(art, "probe.dev"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
    os.unlink(os.path.join(art, "probe.dev"))
    ATTACKS.append(("device", "zero.dev", lambda p: os.mknod(p, stat.S_IFCHR | 0o600,
                                                             os.makedev(1, 5))))
except OSError:
    pass
# Lanes 2 and 3 share the attempts: lane-2 takes the even ones, lane-3 the odd ones.
i = (turn - 1) // 2 * 2 + (lane == "lane-3")
if turn % 2 == 0:
    progress()  # a valid turn between attempts keeps the lane from being held
elif i >= len(ATTACKS):
    done()
else:
    name, path, make = ATTACKS[i]
    note(str(turn), name)
    if make is not None:
        first = path.split("/")[0]
        clear(os.path.join(art, first))
        make(os.path.join(art, path) if "/" not in path else os.path.join(art, first))
    deliver([path])
"""

EXPECTED = {
    "symlink_to_source_file": "is a symbolic link",
    "symlinked_directory": "passes through a symlink",
    "dotdot": "contains '..'",
    "absolute": "is absolute",
    "nul_byte": "contains NUL",
    "backslash": "contains a backslash",
    "device_via_symlink": "is a symbolic link",
    "fifo": "is a FIFO",
    "socket": "is a socket",
    "directory": "is a directory",
    "over_64_mib": "exceeds 67108864 bytes",
    "missing": "is missing",
    "device": "is a device",
}


def test_artifacts_declared_through_links_and_odd_files_are_refused(
    tmp_path: Path, state_home: Path
) -> None:
    src = _source(tmp_path)
    before = _tree(src)
    proc = _run(tmp_path, src, DECLARE, params=",sandbox=off", attackers=2)
    assert proc.returncode == 3, proc.stderr  # every lane held: the attempts are over
    run_dir = _run_dir(state_home, src)
    evs = events(src)
    seen = set()
    for lane in ("lane-2", "lane-3"):
        turns = {e["payload"]["turn"]: e for e in _lane2_turns(evs, lane)}
        for turn, name in _attempts(run_dir, lane).items():
            seen.add(name)
            e = turns[int(turn)]
            assert e["kind"] == "turn_failed", (name, e["payload"])
            error = e["payload"]["error"]
            assert EXPECTED[name] in error, (name, error)
            assert len(error.splitlines()) == 1, (name, error)
            assert e["payload"]["duration"] < 15, (name, "hung")
    assert seen >= set(EXPECTED) - {"device"}
    # Nothing was published, nothing of the source was read into the store.
    assert cli("artifacts", "--json", cwd=src, check=True).stdout.strip() == "{}"
    assert not any(SECRET.encode() in blob for blob in _blobs(run_dir))
    assert _tree(src) == before
    assert check_run(run_dir) == []


# ---- published artifacts edited afterwards -------------------------------------------------------

EDIT = r"""
if turn == 1:
    os.makedirs(os.path.join(art, "pkg"), exist_ok=True)
    open(os.path.join(art, "pkg", "a.txt"), "w").write("original a\n")
    open(os.path.join(art, "pkg", "b.txt"), "w").write("original b\n")
    deliver(["pkg/a.txt", "pkg/b.txt"])
elif turn == 2:
    # The lane's own copy may change; the published one must not.
    open(os.path.join(art, "pkg", "a.txt"), "w").write("edited after publication\n")
    open(os.path.join(art, "pkg", "b.txt"), "w").write("edited after publication\n")
    sha = hashlib.sha256(b"original a\n").hexdigest()
    blob = os.path.join(run_dir, "blobs", "sha256", sha[:2], sha[2:])
    def tamper():
        os.chmod(os.path.dirname(blob), 0o755)
        os.chmod(blob, 0o644)
        with open(blob, "w") as f:
            f.write("tampered blob\n")
    attempt_write("blob", tamper)
    progress()
else:
    done()
"""


@pytest.mark.parametrize("sandbox", ["off", pytest.param("auto", marks=needs_jail)])
def test_published_artifacts_cannot_be_changed_afterwards(
    tmp_path: Path, state_home: Path, sandbox: str
) -> None:
    src = _source(tmp_path)
    proc = _run(tmp_path, src, EDIT, params=f",sandbox={sandbox}")
    assert proc.returncode == 3, proc.stderr
    run_dir = _run_dir(state_home, src)
    tried = _attempts(run_dir)
    packages = json.loads(cli("artifacts", "--json", cwd=src, check=True).stdout)
    ((rid, files),) = packages.items()
    by_path = {f["path"]: f for f in files}
    assert by_path["pkg/b.txt"]["sha256"] == hashlib.sha256(b"original b\n").hexdigest()
    out = tmp_path / "extracted"
    got = cli("artifacts", "last", rid, "--extract", str(out), cwd=src)
    if sandbox == "off":
        # Nothing stops a process of the same user from rewriting a blob: extraction
        # re-hashes and refuses, and the run checker names the artifact.
        assert tried["blob"] == "wrote"
        assert got.returncode != 0
        assert "does not match its recorded sha256" in got.stderr
        assert len(got.stderr.strip().splitlines()) == 1
        assert not (out / "pkg" / "a.txt").exists()
        assert any("pkg/a.txt" in v for v in check_run(run_dir))
    else:
        assert tried["blob"].startswith("refused"), tried
        assert got.returncode == 0, got.stderr
        assert (out / "pkg" / "a.txt").read_text() == "original a\n"
        assert (out / "pkg" / "b.txt").read_text() == "original b\n"
        assert check_run(run_dir) == []
    # The edit of the lane's own copy never reached the store.
    assert not any(b"edited after publication" in blob for blob in _blobs(run_dir))


# ---- the run database, the report store, other lanes' reports and inboxes ------------------------

FORGE = r"""
forged_report = json.dumps({"status": "progress", "summary": "FORGED by lane 2"})
forged_inbox = json.dumps([{"report_id": "lane-2.9999.ffffff", "lane": "lane-2",
                            "report": {"status": "progress", "summary": "FORGED by lane 2"}}])
lane1 = os.path.join(run_dir, "lanes", "lane-1")
def write(path, text):
    def go():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return go
if turn == 1:
    for k in range(int(E["FIRST"]), 60):  # lane 1's future turns: report and inbox files
        d = os.path.join(lane1, "turns", f"{k:05d}-1")
        attempt_write(f"lane1_report_{k}", write(os.path.join(d, "report.json"), forged_report))
        attempt_write(f"lane1_inbox_{k}", write(os.path.join(d, "inbox.json"), forged_inbox))
    ident = {"run_id": E["FLAMECHASE_RUN_ID"], "lane": "lane-1", "turn": 5, "attempt": 1,
             "phase": "terminal"}
    attempt_write("lane1_checkpoint", write(os.path.join(lane1, "checkpoint.json"),
                  json.dumps({"identity": ident, "report": json.loads(forged_report)})))
    def database():
        db = sqlite3.connect(os.path.join(run_dir, "run.db"), timeout=1)
        db.execute("INSERT INTO events (at, kind, lane, actor, payload) VALUES "
                   "('2026-01-01T00:00:00Z', 'turn_valid', 'lane-1', 'x', ?)",
                   (json.dumps({"summary": "FORGED by lane 2"}),))
        db.execute("UPDATE lanes SET held = 1, last_error = 'FORGED by lane 2'")
        db.commit()
    attempt_write("database", database)
    attempt_write("database_file", write(os.path.join(run_dir, "run.db"), "FORGED by lane 2"))
    attempt_write("report_store", write(os.path.join(run_dir, "blobs", "sha256", "ff", "x"),
                                         forged_report))
    attempt_write("source", write(os.path.join(src, "secret.txt"), "FORGED by lane 2"))
    progress()
else:
    done()
"""


@pytest.mark.parametrize("sandbox", [pytest.param("auto", marks=needs_jail), "off"])
def test_forged_reports_and_database_writes_never_show(
    tmp_path: Path, state_home: Path, sandbox: str
) -> None:
    src = _source(tmp_path)
    if sandbox == "off":
        # Unconfined, lane 2 could write anything of this user's; what is tested here is
        # only that files planted for lane 1's future turns are never taken as lane 1's.
        body = (
            FORGE.replace('attempt_write("database", database)', "")
            .replace('attempt_write("database_file",', "(lambda *a: None)(")
            .replace('attempt_write("source",', "(lambda *a: None)(")
            .replace('attempt_write("report_store",', "(lambda *a: None)(")
        )
    else:
        body = FORGE
    # Unconfined, a plant for lane 1's turn under way could win the race with lane 1's own
    # report (nothing can stop that without the sandbox): plant only for later turns.
    first = "1" if sandbox == "auto" else "12"
    proc = _run(tmp_path, src, body, params=f",sandbox={sandbox}", env={"FIRST": first})
    assert proc.returncode == 3, proc.stderr
    run_dir = _run_dir(state_home, src)
    tried = _attempts(run_dir)
    if sandbox == "auto":
        assert tried and all(v.startswith("refused") for v in tried.values()), {
            k: v for k, v in tried.items() if not v.startswith("refused")
        }
        assert (src / "secret.txt").read_text() == SECRET + "\n"
    else:
        assert tried["lane1_report_12"] == "wrote"
    everything = cli("events", "--json", cwd=src, check=True).stdout
    assert "FORGED" not in everything
    assert "lane-2.9999" not in everything
    st = status(src)
    assert st["status"] == "held"
    assert "FORGED" not in json.dumps(st)
    lane1 = st["lanes"][0]
    assert lane1["lane"] == "lane-1" and lane1["turns"] >= 2 and lane1["last_error"] is None
    assert check_run(run_dir) == []
    # Lane 1's turns saw only real inboxes (planted files of turns never taken stay unread).
    taken = [
        e["payload"]["turn"]
        for e in events(src)
        if e["lane"] == "lane-1" and e["kind"] == "turn_started"
    ]
    for turn in taken:
        inbox = run_dir / "lanes" / "lane-1" / "turns" / f"{turn:05d}-1" / "inbox.json"
        assert "FORGED" not in inbox.read_text()


# ---- links planted where the runtime writes a turn's files (found: it wrote through them) ------

PLANT = r"""
turns = os.path.join(run_dir, "lanes", lane, "turns")
def plant():
    # Turn t+1's inbox.json a link to a source file; turn t+2's directory a link into the
    # source, where the runtime would write its prompt and inbox and remove a report.json.
    nxt = os.path.join(turns, f"{turn + 1:05d}-1")
    os.makedirs(nxt, exist_ok=True)
    os.symlink(os.path.join(src, "secret.txt"), os.path.join(nxt, "inbox.json"))
    os.symlink(os.path.join(src, "pkg"), os.path.join(turns, f"{turn + 2:05d}-1"))
if turn % 2:
    attempt_write(f"plant_{turn}", plant)
done() if turn >= 5 else progress()
"""


@pytest.mark.parametrize("sandbox", [pytest.param("auto", marks=needs_jail), "off"])
def test_links_planted_for_the_next_turns_files_are_not_written_through(
    tmp_path: Path, state_home: Path, sandbox: str
) -> None:
    src = _source(tmp_path)
    before = _tree(src)
    proc = _run(tmp_path, src, PLANT, params=f",sandbox={sandbox}")
    assert proc.returncode == 3, proc.stderr
    run_dir = _run_dir(state_home, src)
    assert _attempts(run_dir)["plant_1"] == "wrote"  # the lane's own directory: allowed
    lane2 = _lane2_turns(events(src))
    assert len(lane2) >= 4 and all(e["kind"] == "turn_valid" for e in lane2)
    assert _tree(src) == before  # no inbox, prompt or report landed in (or left) the source
    turns = run_dir / "lanes" / "lane-2" / "turns"
    for e in lane2:
        d = turns / f"{e['payload']['turn']:05d}-1"
        assert not d.is_symlink() and d.is_dir()
        assert not (d / "inbox.json").is_symlink()


# ---- the leaderboard: false claims, and the evaluator as a way out of the sandbox ---------------

CLAIM = r"""
if turn == 1:
    open(os.path.join(art, "c.txt"), "w").write("candidate\n")
    deliver(["c.txt"], {"title": "fast", "metric": "score", "value": 0.001,
                        "direction": "minimize", "evaluator": "sh bench.sh"})
else:
    done()
"""


def test_a_false_score_is_kept_unverified_and_not_ranked(tmp_path: Path, state_home: Path) -> None:
    src = _source(tmp_path)
    proc = _run(tmp_path, src, CLAIM, params=",evaluator=sh bench.sh,direction=minimize")
    assert proc.returncode == 3, proc.stderr
    sub = next(e for e in events(src) if e["kind"] == "candidate_submitted")["payload"]
    assert sub["claimed"] == 0.001 and sub["measured"] == 5.0
    assert sub["verified"] is False
    assert "claimed 0.001 but the evaluator measured 5" in sub["unverified_reason"]
    board = status(src)["leaderboard"]
    assert board["submission_count"] == 1
    assert board["best"] is None and board["leaders"] == []


ESCAPE = r"""
if turn == 1:
    # The evaluator runs this lane's bench.sh: make it write the user's tree.
    open(os.path.join(ws, "bench.sh"), "w").write(
        f"echo pwned > {src}/secret.txt; echo pwned > {src}/planted.txt; echo SCORE: 1\n")
    open(os.path.join(art, "c.txt"), "w").write("candidate\n")
    deliver(["c.txt"], {"title": "t", "metric": "score", "value": 1, "direction": "minimize",
                        "evaluator": "sh bench.sh"})
else:
    done()
"""


@needs_jail
def test_the_evaluator_does_not_take_a_sandboxed_lane_out_of_its_sandbox(
    tmp_path: Path, state_home: Path
) -> None:
    src = _source(tmp_path)
    before = _tree(src)
    proc = _run(tmp_path, src, ESCAPE, params=",evaluator=sh bench.sh,direction=minimize")
    assert proc.returncode == 3, proc.stderr
    assert _tree(src) == before
    # bench.sh is the evaluator's own file, frozen at the start: the submission that changed
    # it is not measured at all.
    sub = next(e for e in events(src) if e["kind"] == "candidate_submitted")["payload"]
    assert sub["measured"] is None and sub["verified"] is False
    assert "tampered" in sub["unverified_reason"] and "bench.sh" in sub["unverified_reason"]


FORGE_SCORE = r"""
if turn == 1:
    # The forged-score attack: make the evaluator print the best possible value.
    open(os.path.join(ws, "bench.sh"), "w").write("echo SCORE: 0.001\n")
    open(os.path.join(art, "c.txt"), "w").write("candidate\n")
    deliver(["c.txt"], {"title": "t", "metric": "score", "value": 0.001,
                        "direction": "minimize", "evaluator": "sh bench.sh"})
elif turn == 2:
    inbox = json.load(open(E["FLAMECHASE_INBOX"]))
    told = [d for d in inbox if d["lane"] == "system:" + lane]
    note("told", told[0]["report"]["summary"] if told else "nothing")
    done()
else:
    done()
"""


def test_a_lane_that_rewrites_the_evaluator_cannot_forge_its_score(
    tmp_path: Path, state_home: Path
) -> None:
    src = _source(tmp_path)
    proc = _run(tmp_path, src, FORGE_SCORE, params=",evaluator=sh bench.sh,direction=minimize")
    assert proc.returncode == 3, proc.stderr
    sub = next(e for e in events(src) if e["kind"] == "candidate_submitted")["payload"]
    assert sub["verified"] is False and sub["ranked"] is False
    assert sub["measured"] is None and "tampered" in sub["unverified_reason"]
    board = status(src)["leaderboard"]
    assert board["best"] is None and board["leaders"] == []
    # The lane heard why, in a system report delivered to it alone.
    told = _attempts(_run_dir(state_home, src))["told"]
    assert "not measured" in told and "bench.sh" in told


SWAP_WORKSPACE = r"""
if turn == 1:
    open(os.path.join(art, "c.txt"), "w").write("candidate\n")
    os.rename(ws, ws + ".moved")
    os.symlink(src, ws)  # the evaluator would run in (and write) the user's tree
    deliver(["c.txt"], {"title": "t", "metric": "score", "value": 5, "direction": "minimize",
                        "evaluator": "sh bench.sh"})
else:
    progress()
"""


def test_the_evaluator_never_runs_in_a_swapped_workspace(tmp_path: Path, state_home: Path) -> None:
    src = _source(tmp_path)
    (src / "bench.sh").write_text("echo ran >> evaluated.log\necho SCORE: 5\n")
    before = _tree(src)
    proc = _run(
        tmp_path,
        src,
        SWAP_WORKSPACE,
        params=",sandbox=off,evaluator=sh bench.sh,direction=minimize",
    )
    assert proc.returncode == 1, proc.stderr
    assert "lanes/lane-2/workspace" in status(src)["last_error"]
    assert _tree(src) == before  # no evaluated.log: the evaluator never ran there
    assert status(src)["leaderboard"]["best"] is None


# ---- a directory swapped between the runtime's check and its use ---------------------------------

RACE = r'''
pkg = os.path.join(art, "pkg")
pidfile = os.path.join(ws, "racer.pid")
if os.path.exists(pidfile):  # the last turn's racer, if the sweep has not ended it yet
    try:
        os.kill(int(open(pidfile).read()), 9)
        time.sleep(0.05)
    except (ProcessLookupError, ValueError):
        pass
for real in (art, pkg, os.path.join(pkg, "secret.txt")):  # undo a swap cut half-way
    if os.path.islink(real):
        os.unlink(real)
    if os.path.lexists(real + ".real"):
        os.rename(real + ".real", real)
# Lane 1 may stop now: this lane races until it is held (two refusals in a row) or done.
open(os.path.join(run_dir, "lanes", lane, "DONE"), "w").write("1")
if turn <= 6:
    os.makedirs(pkg, exist_ok=True)
    with open(os.path.join(pkg, "secret.txt"), "w") as f:
        f.write(f"lane content {turn}\n")
    racer = r"""
import os, sys
art, decoy = sys.argv[1], sys.argv[2]
pkg = os.path.join(art, "pkg")
moves = [(art, decoy), (pkg, os.path.join(decoy, "pkg")),
         (os.path.join(pkg, "secret.txt"), os.path.join(decoy, "pkg", "secret.txt"))]
i = 0
while True:
    real, target = moves[i % 3]
    i += 1
    try:
        os.rename(real, real + ".real")
        try:
            os.symlink(target, real)
            os.unlink(real)
        finally:
            os.rename(real + ".real", real)
    except OSError:
        pass
"""
    # A daemon of its own session: the turn's process group ends, the racer goes on while
    # the runtime freezes the package (until the sweep of the turn's leftovers gets it).
    racer = subprocess.Popen([sys.executable, "-c", racer, art, os.path.join(src, "decoy")],
                             start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    open(pidfile, "w").write(str(racer.pid))
    time.sleep(0.05)
    deliver(["pkg/secret.txt"])
else:
    done()
'''


def test_swapping_the_artifact_dir_for_a_link_never_publishes_a_source_file(
    tmp_path: Path, state_home: Path
) -> None:
    src = _source(tmp_path)
    (src / "decoy" / "pkg").mkdir(parents=True)
    (src / "decoy" / "pkg" / "secret.txt").write_text(SECRET + " decoy\n")
    before = _tree(src)
    proc = _run(tmp_path, src, RACE, params=",sandbox=off")
    # Refused turns (held), a control-path stop, or published lane content: all fine.
    assert proc.returncode in (1, 3), proc.stderr
    if proc.returncode == 1:
        assert "replaced or linked" in status(src)["last_error"]
    run_dir = _run_dir(state_home, src)
    blobs = _blobs(run_dir)
    assert not any(SECRET.encode() in b for b in blobs)
    assert all(b.startswith(b"lane content ") for b in blobs), blobs
    for e in _lane2_turns(events(src)):
        if e["kind"] == "turn_failed":
            err = e["payload"]["error"]
            assert "invalid deliverable" in err and len(err.splitlines()) == 1, err
    assert _tree(src) == before
    assert check_run(run_dir) == []


# ---- modes --------------------------------------------------------------------------------------


def test_state_home_run_dirs_and_turn_files_are_private(tmp_path: Path, state_home: Path) -> None:
    src = _source(tmp_path)
    proc = _run(tmp_path, src, "done() if turn > 1 else progress()\n")
    assert proc.returncode == 3, proc.stderr
    run_dir = _run_dir(state_home, src)
    private = [
        state_home,
        state_home / "runs",
        state_home / "locks",
        run_dir,
        run_dir / "lanes",
        run_dir / "planning",
        run_dir / "planning" / "1",
        *run_dir.glob("planning/1/attempts*"),
        *run_dir.glob("planning/1/attempts/*"),
        *run_dir.glob("planning/1/attempts/*/prompt.md"),
    ]
    private += list(run_dir.glob("run.db*"))
    for lane in ("lane-1", "lane-2"):
        d = run_dir / "lanes" / lane
        private += [d, d / "turns", d / "artifacts", *d.glob("turns/*")]
        private += [*d.glob("turns/*/prompt.md*"), *d.glob("turns/*/inbox.json")]
    assert len(private) > 15
    loose = {
        str(p.relative_to(tmp_path)): oct(stat.S_IMODE(p.lstat().st_mode))
        for p in private
        if p.lstat().st_mode & 0o077
    }
    assert loose == {}
