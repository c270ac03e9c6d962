"""A lane's turn binds TCP ports only in its block, under either jail, where Landlock can
(ABI 4, Linux 6.7): a bind outside fails with EACCES and the program goes on; its block,
port 0 (an ephemeral port), connecting anywhere and UDP stay free; a spec without a block
binds what it likes; bubblewrap's own confinement is the same with a block as without.

Real processes: `jail.wrap` around a Python program that tries each and prints what it got.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flamechase import jail
from flamechase.jail import JailSpec, Mode
from flamechase.jail.bwrap import bwrap_argv
from tests.jail.conftest import MODES, PROBE

needs_ports = pytest.mark.skipif(
    not PROBE.landlock_ports, reason="Landlock ABI below 4: no TCP port rules on this kernel"
)

BLOCK = (24000, 5)  # any: nothing listens in the test, only binds are tried
OUTSIDE = 15013  # below every block and the ephemeral range; refused before "in use"

TRY = r"""
import errno, json, socket, sys
first, count, outside, server = (int(a) for a in sys.argv[1:5])
def bind(port, kind=socket.SOCK_STREAM, family=socket.AF_INET, host="127.0.0.1"):
    try:
        with socket.socket(family, kind) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
            return s.getsockname()[1]
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
got = {
    "outside": bind(outside),
    "outside_v6": bind(outside, family=socket.AF_INET6, host="::1"),
    "inside": [bind(p) for p in range(first, first + count)],
    "ephemeral": bind(0),
    "udp_outside": bind(outside, kind=socket.SOCK_DGRAM),
}
with socket.create_connection(("127.0.0.1", server), timeout=10) as c:
    got["connected"] = c.recv(16).decode()
listener = socket.socket()
listener.listen()  # no bind at all: the kernel picks a port, as for port 0
got["listen_unbound"] = listener.getsockname()[1]
print(json.dumps(got))
"""


@pytest.fixture
def server() -> Iterator[int]:
    """A server outside every block (as another lane's, or a model API's): says `hello`."""
    import threading

    srv = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"hello")

    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1]
    srv.close()


def _try(spec: JailSpec, server: int, tmp: Path) -> dict[str, object]:
    script = tmp / "try.py"
    script.write_text(TRY)
    first, count = BLOCK
    argv = [sys.executable, "-I", str(script), str(first), str(count), str(OUTSIDE), str(server)]
    done = subprocess.run(
        jail.wrap(argv, spec), cwd=tmp, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    got: dict[str, object] = json.loads(done.stdout)
    return got


@needs_ports
@pytest.mark.parametrize("mode", MODES)
def test_a_turn_with_a_block_binds_only_there_and_port_zero(
    tmp_path: Path, mode: Mode, server: int
) -> None:
    spec = JailSpec(mode=mode, place=tmp_path, tmp=tmp_path, ports=BLOCK)
    got = _try(spec, server, tmp_path)
    assert got["outside"] == "EACCES"  # and it went on
    assert got["outside_v6"] in ("EACCES", "EAFNOSUPPORT")  # (a machine without IPv6)
    first, count = BLOCK
    inside = got["inside"]
    assert isinstance(inside, list) and len(inside) == count
    # Another test (or user) may hold one of them: in use, never refused.
    assert all(p == first + i or p == "EADDRINUSE" for i, p in enumerate(inside)), inside
    assert isinstance(got["ephemeral"], int) and got["ephemeral"] > 0
    assert isinstance(got["listen_unbound"], int) and got["listen_unbound"] > 0
    assert got["udp_outside"] in (OUTSIDE, "EADDRINUSE")  # Landlock has no UDP rules
    assert got["connected"] == "hello"


@pytest.mark.parametrize("mode", MODES)
def test_a_turn_without_a_block_binds_any_port(tmp_path: Path, mode: Mode, server: int) -> None:
    spec = JailSpec(mode=mode, place=tmp_path, tmp=tmp_path)
    got = _try(spec, server, tmp_path)
    assert got["outside"] in (OUTSIDE, "EADDRINUSE"), got
    assert got["connected"] == "hello"


def test_a_block_changes_nothing_of_bubblewraps_own_confinement(tmp_path: Path) -> None:
    plain = JailSpec(mode="bwrap", place=tmp_path, tmp=tmp_path)
    kept = JailSpec(mode="bwrap", place=tmp_path, tmp=tmp_path, ports=BLOCK)
    argv = ["/bin/true"]
    before, after = bwrap_argv(argv, plain, bwrap="bwrap"), bwrap_argv(argv, kept, bwrap="bwrap")
    cut = before.index("--")
    assert after[: cut + 1] == before[: cut + 1]  # the same mounts, namespaces and options
    if PROBE.landlock_ports:
        assert after[cut + 1 :][-4:] == ["--ports", "24000:5", "--", "/bin/true"]
        assert "--net-only" in after and "--write" not in after
    else:
        assert after == before


@needs_ports
@pytest.mark.parametrize("mode", MODES)
def test_a_program_a_kept_jail_cannot_run_is_told_from_one_that_ran(
    tmp_path: Path, mode: Mode
) -> None:
    spec = JailSpec(mode=mode, place=tmp_path, tmp=tmp_path, ports=BLOCK)
    done = subprocess.run(
        jail.wrap(["no-such-program-here"], spec), capture_output=True, text=True, check=False
    )
    said = jail.not_started(done.returncode, done.stderr, "no-such-program-here", spec)
    assert said is not None and "no-such-program-here" in said


@pytest.mark.parametrize("mode", MODES)
def test_the_launcher_imports_nothing_from_the_place_it_starts_in(
    tmp_path: Path, mode: Mode
) -> None:
    """The launcher starts as a module (for its cached bytecode): a `landlock_exec.py` or a
    `ctypes.py` an agent left in its place is never what runs."""
    marker = tmp_path / "imported"
    for name in ("landlock_exec.py", "ctypes.py", "_signal.py"):
        (tmp_path / name).write_text(f"open({str(marker)!r}, 'w').write({name!r})\n")
    spec = JailSpec(mode=mode, place=tmp_path, tmp=tmp_path, ports=BLOCK)
    done = subprocess.run(
        jail.wrap(["/bin/echo", "ran"], spec), cwd=tmp_path, capture_output=True, text=True
    )
    assert done.stdout == "ran\n" and not marker.exists(), done.stderr
