"""Landlock launcher:
`python -I -S landlock_exec.py [--write PATH]... [--home DIR] [--ports FIRST:COUNT] -- ARGV...`
or, inside bubblewrap, `python -I -S landlock_exec.py --net-only --ports FIRST:COUNT -- ARGV...`.

Forks ARGV under a Landlock ruleset that forbids every file-system write except beneath the
given paths (reads and execution stay allowed), with no_new_privs, and on ABI 6 and later
scoped so that it cannot signal or reach the abstract sockets of anything outside its own
domain (the engine, other lanes, this launcher). The launcher itself stays outside the domain
as the subreaper of the turn: a daemon that leaves the process group and clears its
environment is still re-parented here, and when ARGV exits everything it left is killed before
the launcher exits with ARGV's status. SIGTERM/SIGINT/SIGHUP reaching the launcher are passed
to every descendant.

`--ports FIRST:COUNT` (ABI 4 and later) also lets ARGV bind TCP ports only in that block, or
port 0 (the kernel picks one from the ephemeral range, which test runners and CLIs' helper
servers use); a bind elsewhere fails with EACCES. Connecting is not restricted, nor is UDP
(Landlock has no rights for it). `--net-only` applies only that, and execs ARGV in place (no
fork, no subreaper): bubblewrap confines the file system and tears the turn down itself.

Runs as a separate, dependency-free interpreter (imports nothing of flamechase) so the rules
never touch the engine itself and nothing is done between fork and exec in a threaded parent.
The engine starts it as a module (`python -I -S -c BOOT ...`, jail/landlock.py), so its
cached bytecode is used; as a script it works the same.
Exit 126 when the rules cannot be applied: the turn fails rather than running unconfined.
"""

import ctypes
import os
import sys

# Start-up is paid per turn: neither `typing` nor `signal` (which imports enum, a tenth of
# the start-up time) is imported at run time; `_signal` is the same functions and numbers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import NoReturn
else:
    import _signal as signal

SYS_CREATE, SYS_ADD_RULE, SYS_RESTRICT = 444, 445, 446
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2  # ABI 4
BIND_TCP = 1 << 0  # ABI 4: LANDLOCK_ACCESS_NET_BIND_TCP; connecting stays unhandled

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
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FILE_RIGHTS = WRITE_FILE | TRUNCATE
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Python ignores SIGPIPE and SIGXFSZ, and bubblewrap's caller ignores SIGTERM: ignored
# signals stay ignored across exec, so ARGV gets the defaults back first.
DEFAULTED = (signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ)


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


def _fail(msg: str) -> "NoReturn":
    sys.stderr.write(f"flamechase jail (landlock): {msg}\n")
    os._exit(126)


class Options:
    def __init__(self) -> None:
        self.writable: list[str] = []
        self.home: str | None = None
        self.ports: range | None = None
        self.net_only = False
        self.argv: list[str] = []


def _parse(args: list[str]) -> Options:
    opts = Options()
    while args and args[0] in ("--write", "--home", "--ports", "--net-only"):
        if args[0] == "--net-only":
            opts.net_only = True
            args = args[1:]
            continue
        if len(args) < 2:
            break
        if args[0] == "--write":
            opts.writable.append(args[1])
        elif args[0] == "--home":
            opts.home = args[1]
        else:
            first, _, count = args[1].partition(":")
            if not (first.isdigit() and count.isdigit()) or int(first) + int(count) > 65536:
                _fail(f"--ports {args[1]}: expected FIRST:COUNT within 1-65535")
            opts.ports = range(int(first), int(first) + int(count))
        args = args[2:]
    if not args or args[0] != "--" or len(args) < 2 or (opts.net_only and opts.ports is None):
        _fail(
            "usage: landlock_exec.py [--write PATH]... [--home DIR] [--ports FIRST:COUNT] "
            "-- ARGV, or --net-only --ports FIRST:COUNT -- ARGV"
        )
    opts.argv = args[1:]
    return opts


def _add_rule(libc: ctypes.CDLL, ruleset: int, kind: int, rule: ctypes.Structure) -> bool:
    return bool(
        libc.syscall(
            SYS_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(kind),
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
        == 0
    )


def _ruleset(libc: ctypes.CDLL, opts: Options) -> int:
    """A ruleset fd: writes beneath `opts.writable` (unless net-only), TCP binds in
    `opts.ports` and to port 0 (when given)."""
    abi = libc.syscall(SYS_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        _fail("Landlock is not available on this kernel")
    if opts.ports is not None and abi < 4:
        _fail("this kernel's Landlock cannot restrict TCP ports (ABI 4, Linux 6.7, needed)")
    handled = 0 if opts.net_only else _fs_rights(abi)
    net = BIND_TCP if opts.ports is not None else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 and not opts.net_only else 0
    attr = RulesetAttr(handled, net, scoped)
    # Older kernels reject the larger struct: pass only the fields they know.
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(
        SYS_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    if ruleset < 0:
        _fail(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")
    for path in [] if opts.net_only else opts.writable:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError as exc:
            _fail(f"cannot open {path}: {exc.strerror}")
        rights = handled if os.path.isdir(path) else (handled & FILE_RIGHTS)
        if not _add_rule(libc, ruleset, RULE_PATH_BENEATH, PathBeneathAttr(rights, fd)):
            _fail(f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
        os.close(fd)
    for port in [0, *opts.ports] if opts.ports is not None else []:
        if not _add_rule(libc, ruleset, RULE_NET_PORT, NetPortAttr(BIND_TCP, port)):
            _fail(f"landlock_add_rule port {port}: {os.strerror(ctypes.get_errno())}")
    return int(ruleset)


def _fs_rights(abi: int) -> int:
    handled = (
        WRITE_FILE
        | REMOVE_DIR
        | REMOVE_FILE
        | MAKE_CHAR
        | MAKE_DIR
        | MAKE_REG
        | MAKE_SOCK
        | MAKE_FIFO
        | MAKE_BLOCK
        | MAKE_SYM
    )
    if abi >= 2:
        handled |= REFER
    if abi >= 3:
        handled |= TRUNCATE
    return handled


def _child(libc: ctypes.CDLL, ruleset: int, opts: Options, parent: int) -> "NoReturn":
    """In the forked child: die with the launcher, confine, exec."""
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent:
        os._exit(126)
    _confine_and_exec(libc, ruleset, opts)


def _confine_and_exec(libc: ctypes.CDLL, ruleset: int, opts: Options) -> "NoReturn":
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.syscall(SYS_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        _fail(f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}")
    os.close(ruleset)
    if opts.home is not None:
        os.environ["HOME"] = opts.home
    for sig in DEFAULTED:
        signal.signal(sig, signal.SIG_DFL)
    argv = opts.argv
    try:
        os.execvp(argv[0], argv)  # noqa: S606 -- the agent's own argv, never a shell
    except OSError as exc:
        sys.stderr.write(f"flamechase jail: cannot run {argv[0]}: {exc.strerror}\n")
        os._exit(127)


def _descendants() -> list[int]:
    """Every live descendant of this process, from the parent links in /proc/*/stat."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[0] not in ("Z", "X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = [os.getpid()]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _signal_all(sig: int) -> None:
    for pid in _descendants():
        try:  # noqa: SIM105 -- importing contextlib costs start-up time on every turn
            os.kill(pid, sig)
        except OSError:
            pass


def _reap_all() -> None:
    """Kill whatever the turn left (re-parented here as orphans) until nothing is left.

    No child means no descendant (an orphan would have been re-parented here): the usual
    end of a turn costs no look at /proc.
    """
    for _ in range(1000):
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
            _signal_all(signal.SIGKILL)
            os.waitpid(-1, 0)  # one blocking reap: the next pass sees what it re-parented
        except ChildProcessError:
            return


def _exit_like(status: int) -> "NoReturn":
    """Exit as ARGV did: the same code, or death by the same signal (without a core)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        try:  # noqa: SIM105 -- as above
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL: its action cannot be changed, nor needs to be
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def main() -> None:
    opts = _parse(sys.argv[1:])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ruleset = _ruleset(libc, opts)
    if opts.net_only:
        _confine_and_exec(libc, ruleset, opts)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        _fail("prctl(PR_SET_CHILD_SUBREAPER) failed")
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        _child(libc, ruleset, opts, parent)
    os.close(ruleset)
    for sig in FORWARDED:
        signal.signal(sig, lambda s, _f: _signal_all(s))
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(125)  # cannot happen: the main child is ours until reaped
        except InterruptedError:
            continue
        if done == pid:
            break
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_IGN)
    _reap_all()
    _exit_like(status)


if __name__ == "__main__":
    main()
