"""A hostile actor for jail tests: every way we know to change, read or signal what it must not.

`ATTACKER` is a stdlib-only Python program run inside a jail. It reads a JSON list of
attempts `[name, op, target, extra]` from $ATTEMPTS, tries each, and prints one JSON object
`{name: "done" | "refused: <errno name>"}`. Targets are always test-owned paths: if a jail
ever failed open, nothing outside the test's directory would be touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from flamechase import jail
from flamechase.jail import JailSpec

# The attacks, one function each: op_<name>(target, extra); an OSError means refused.
OPS = r"""
import errno, json, os, signal, sys

def op_write(t, x):
    with open(t, "a") as f:
        f.write("pwned\n")

def op_create(t, x):
    with open(os.path.join(t, x or "PWNED"), "w") as f:
        f.write("pwned\n")

def op_truncate(t, x):
    os.truncate(t, 0)

def op_chmod(t, x):
    os.chmod(t, 0o4777 if os.path.isfile(t) else 0o777)

def op_chown(t, x):
    os.chown(t, os.getuid(), os.getgid())

def op_utime(t, x):
    os.utime(t, (1, 1))

def op_xattr(t, x):
    os.setxattr(t, "user.flamechase", b"pwned")

def op_unlink(t, x):
    os.unlink(t)

def op_mkdir(t, x):
    os.mkdir(os.path.join(t, "PWNED.d"))

def op_mkfifo(t, x):
    os.mkfifo(os.path.join(t, "PWNED.fifo"))

def op_symlink_in(t, x):  # plant a link inside the protected directory
    os.symlink("/", os.path.join(t, "PWNED.link"))

def op_rename_out(t, x):  # move the protected file into our own place
    os.rename(t, os.path.join(x, "stolen"))

def op_rename_over(t, x):  # replace the protected file by one of ours
    mine = os.path.join(x, "mine")
    with open(mine, "w") as f:
        f.write("pwned\n")
    os.rename(mine, t)

def op_via_symlink(t, x):  # a link in our place pointing at the target, written through
    link = os.path.join(x, "via-link")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(t, link)
    with open(link, "a") as f:
        f.write("pwned\n")

def op_via_hardlink(t, x):  # a hard link in our place to the target, written through
    link = os.path.join(x, "via-hardlink")
    if os.path.lexists(link):
        os.unlink(link)
    os.link(t, link)
    with open(link, "a") as f:
        f.write("pwned\n")

def op_via_proc_root(t, x):
    with open("/proc/self/root" + t, "a") as f:
        f.write("pwned\n")

def op_via_relative(t, x):
    with open(os.path.relpath(t, os.getcwd()), "a") as f:
        f.write("pwned\n")

def op_via_fd_reopen(t, x):  # a read-only descriptor re-opened for writing
    fd = os.open(t, os.O_RDONLY)
    with open(f"/proc/self/fd/{fd}", "a") as f:
        f.write("pwned\n")

def op_via_opath_reopen(t, x):
    fd = os.open(t, os.O_PATH)
    with open(f"/proc/self/fd/{fd}", "a") as f:
        f.write("pwned\n")

def op_read(t, x):
    if os.path.isdir(t):
        if not os.listdir(t):
            raise OSError(errno.ENOENT, "empty")
        return
    with open(t, "rb") as f:
        f.read()

def op_kill(t, x):
    os.kill(int(t), int(x or signal.SIGKILL))

def op_killpg(t, x):
    os.killpg(int(t), int(x or signal.SIGKILL))

def try_all(attempts):
    results = {}
    for name, op, target, extra in attempts:
        try:
            globals()["op_" + op](target, extra)
            results[name] = "done"
        except OSError as exc:
            results[name] = "refused: " + errno.errorcode.get(exc.errno or 0, str(exc))
    return results
"""

ATTACKER = (
    OPS
    + """
print(json.dumps(try_all(json.loads(os.environ["ATTEMPTS"]))))
"""
)

# ops that change a file's content or the directory that holds it; those that remove the
# file come last, so that unconfined every attempt meets the file still there
CONTENT_OPS = (
    "write",
    "truncate",
    "via_symlink",
    "via_hardlink",
    "via_proc_root",
    "via_relative",
    "via_fd_reopen",
    "via_opath_reopen",
)
REMOVING_OPS = ("rename_over", "rename_out", "unlink")
DIR_OPS = ("create", "mkdir", "mkfifo", "symlink_in")
METADATA_OPS = ("chmod", "chown", "utime", "xattr")

Attempt = tuple[str, str, str, str]


def file_attacks(label: str, target: Path, place: Path) -> list[Attempt]:
    """Every content and metadata attack on one file, the attacker's own place as the base."""
    return [
        (f"{label}:{op}", op, str(target), str(place))
        for op in (*CONTENT_OPS, *METADATA_OPS, *REMOVING_OPS)
    ]


def dir_attacks(label: str, target: Path) -> list[Attempt]:
    return [(f"{label}:{op}", op, str(target), "") for op in (*DIR_OPS, *METADATA_OPS)]


def attack(
    spec: JailSpec,
    attempts: list[Attempt],
    *,
    env: Mapping[str, str] | None = None,
    prefix: list[str] | None = None,
    timeout: float = 60,
) -> dict[str, str]:
    """Run the attacker in `spec`'s jail (under `prefix`, e.g. a privilege drop); its results."""
    argv = jail.wrap([sys.executable, "-I", "-c", ATTACKER], spec)
    full_env = dict(os.environ if env is None else env)
    full_env["ATTEMPTS"] = json.dumps(attempts)
    done = subprocess.run(
        [*(prefix or []), *argv],
        cwd=spec.place,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )  # as agents are
    assert done.returncode == 0, done.stderr
    results: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


def escaped(results: Mapping[str, str]) -> dict[str, str]:
    """The attempts that were not refused."""
    return {k: v for k, v in results.items() if not v.startswith("refused")}
