"""Landlock launcher: `python -I -S sandbox_exec.py --write DIR ... -- ARGV...`.

Applies a Landlock ruleset that forbids every filesystem write except under the given
directories (reads and execution stay allowed), sets no_new_privs, then execs ARGV. Runs
as a separate, dependency-free interpreter so the rules never touch the engine itself and
nothing is done between fork and exec in a threaded parent. Exit 126 when the rules
cannot be applied: the turn fails rather than running unconfined.
"""

import ctypes
import os
import sys

SYS_CREATE, SYS_ADD_RULE, SYS_RESTRICT = 444, 445, 446
PR_SET_NO_NEW_PRIVS = 38
RULE_PATH_BENEATH = 1

WRITE_FILE = 1 << 1
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3

FILE_RIGHTS = WRITE_FILE | TRUNCATE


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _fail(msg: str) -> "None":
    sys.stderr.write(f"flamechase sandbox: {msg}\n")
    os._exit(126)


def main() -> None:
    args = sys.argv[1:]
    writable = []
    while args and args[0] == "--write":
        writable.append(args[1])
        args = args[2:]
    if not args or args[0] != "--":
        _fail("usage: sandbox_exec.py --write DIR ... -- ARGV")
    argv = args[1:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(SYS_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        _fail("Landlock is not available on this kernel")
    handled = (WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG
               | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM)
    if abi >= 2:
        handled |= REFER
    if abi >= 3:
        handled |= TRUNCATE
    attr = RulesetAttr(handled)
    ruleset = libc.syscall(SYS_CREATE, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        _fail(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")
    for path in writable:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError as exc:
            _fail(f"cannot open {path}: {exc.strerror}")
        is_dir = os.path.isdir(path)
        rights = handled if is_dir else (handled & FILE_RIGHTS)
        rule = PathBeneathAttr(rights, fd)
        if libc.syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH),
                        ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            _fail(f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
        os.close(fd)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.syscall(SYS_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        _fail(f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}")
    os.close(ruleset)
    try:
        os.execvp(argv[0], argv)  # noqa: S606 -- the agent's own argv, never a shell
    except OSError as exc:
        sys.stderr.write(f"flamechase sandbox: cannot run {argv[0]}: {exc.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    main()
