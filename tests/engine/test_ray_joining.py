"""Joining a Ray cluster is bounded and answers in one line: whatever listens (or does not)
at the address, `flamechase exec --executor ray=...` is refused within seconds, exit 2,
nothing written, and Ray's own lines never reach the terminal. No Ray cluster is needed:
loopback servers stand in for what a wrong address finds."""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from flamechase.engine.remote import joining
from flamechase.errors import ExecutorUnavailable
from tests.helpers import FLAMECHASE, REPORT_OK, actor, cli, send_signal, wait_for_process

pytestmark = pytest.mark.timeout(180)

# The HTTP/2 server preface a gRPC server (Ray's GCS) opens with: an empty SETTINGS frame.
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


@contextlib.contextmanager
def _listener(answer: bytes | None) -> Iterator[int]:
    """A loopback port where each connection gets `answer` (None: silence) and is then held
    open, as a server that speaks but never serves; its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            if answer is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        for c in held:
            c.close()


@contextlib.contextmanager
def _http_server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _exec(tmp: Path, executor: str) -> list[str]:
    a = actor(tmp, "a.sh", REPORT_OK)
    return [
        *FLAMECHASE,
        "exec",
        "-f",
        "flame_chase",
        "--executor",
        executor,
        "-a",
        f"exec:{a}",
        "-a",
        f"exec:{a}",
        "-p",
        "budget.turns=2",
        "x",
    ]


def _refused(tree: Path, tmp: Path, executor: str, env: dict[str, str] | None = None) -> str:
    pytest.importorskip("ray", reason="needs flamechase[ray]")
    argv = _exec(tmp, executor)
    out = cli(*argv[3:], cwd=tree, env={"RAY_USAGE_STATS_ENABLED": "0", **(env or {})})
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()  # one line: none of Ray's
    assert not (Path(os.environ["FLAMECHASE_HOME"]) / "runs").exists()
    return line


def test_an_http_server_is_not_a_cluster(source_tree: Path, tmp_path: Path) -> None:
    with _http_server() as port:
        line = _refused(source_tree, tmp_path, f"ray=127.0.0.1:{port}")
    assert f"an HTTP server at 127.0.0.1:{port} is not a Ray cluster" in line


def test_an_http_url_in_ray_address_is_refused_as_such(source_tree: Path, tmp_path: Path) -> None:
    with _http_server() as port:
        line = _refused(
            source_tree, tmp_path, "ray", env={"RAY_ADDRESS": f"http://127.0.0.1:{port}"}
        )
    assert f"RAY_ADDRESS=http://127.0.0.1:{port}: that is an HTTP URL" in line
    assert "HOST:PORT" in line


def test_a_server_that_says_nothing_is_refused(source_tree: Path, tmp_path: Path) -> None:
    with _listener(None) as port:
        line = _refused(source_tree, tmp_path, f"ray=127.0.0.1:{port}")
    assert f"something listens at 127.0.0.1:{port} but says nothing within 3 s" in line


def test_nothing_listening_is_refused(source_tree: Path, tmp_path: Path) -> None:
    port = _closed_port()
    line = _refused(source_tree, tmp_path, f"ray=127.0.0.1:{port}")
    assert f"nothing answers at 127.0.0.1:{port}" in line


@pytest.mark.slow
def test_a_grpc_server_that_is_not_ray_is_refused_and_ray_stays_quiet(
    source_tree: Path, tmp_path: Path
) -> None:
    """Ray's GCS client would wait 40 s a try, twenty tries, warning on the terminal."""
    with _listener(SETTINGS) as port:
        line = _refused(source_tree, tmp_path, f"ray=127.0.0.1:{port}")
    assert "gave no answer as a Ray cluster's GCS within 20 s" in line
    log = joining.log_path()
    assert f"Ray's log: {log}" in line
    assert log.is_file()  # what Ray said goes there, not to the terminal


def test_ctrl_c_ends_the_wait_for_a_cluster_at_once(source_tree: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="needs flamechase[ray]")
    with _listener(SETTINGS) as port:
        proc = subprocess.Popen(
            _exec(tmp_path, f"ray=127.0.0.1:{port}"),
            cwd=source_tree,
            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        try:
            survey = f"remote.joining 127.0.0.1:{port}$"
            wait_for_process(survey, timeout=60)
            send_signal(proc, signal.SIGINT)
            # Well inside the 20 s the survey is allowed: the signal ended it.
            _out, err = proc.communicate(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130, err
    assert len(err.strip().splitlines()) <= 1 and "GCS" not in err, err  # none of Ray's lines
    gone = subprocess.run(["pgrep", "-f", survey], capture_output=True)
    assert gone.returncode == 1, "the survey outlived the Ctrl-C"


# ---- what the GCS said, judged (pure, plus one TCP connect) -------------------------------

LOCAL = "a" * 56


def _found(port: int, **meta: str) -> dict[str, object]:
    return {
        "meta": {"ray_version": "2.60.0", "python_version": "3.11.7", **meta},
        "nodes": [{"id": LOCAL, "address": "127.0.0.1", "port": port, "head": True, "alive": True}],
        "local": [LOCAL],
    }


def test_another_ray_version_is_refused() -> None:
    with pytest.raises(ExecutorUnavailable, match=r"runs Ray 2\.9\.0, this machine Ray 2\.60\.0"):
        joining.judge(_found(1, ray_version="2.9.0"), "h:1", "--executor ray=h:1", "2.60.0")


def test_another_python_is_refused() -> None:
    found = _found(1, python_version="2.7.18")
    with pytest.raises(ExecutorUnavailable, match=r"runs Python 2\.7\.18, this machine Python"):
        joining.judge(found, "h:1", "--executor ray=h:1", "2.60.0")


def test_a_cluster_with_no_node_on_this_machine_says_how_to_add_one() -> None:
    found = {**_found(1), "local": ["b" * 56]}
    with pytest.raises(ExecutorUnavailable, match=r"run `ray start --address=h:1` here first"):
        joining.judge(found, "h:1", "--executor ray=h:1", "2.60.0")


def test_a_head_whose_advertised_address_does_not_answer_is_refused() -> None:
    port = _closed_port()
    python = ".".join(map(str, sys.version_info[:3]))
    found = _found(port, python_version=python)
    with pytest.raises(ExecutorUnavailable) as got:
        joining.judge(found, "h:1", "--executor ray=h:1", "2.60.0")
    assert f"advertises 127.0.0.1:{port}, which does not answer from here" in str(got.value)
    assert "--node-ip-address" in str(got.value)


def test_a_live_cluster_with_a_node_here_is_joined() -> None:
    python = ".".join(map(str, sys.version_info[:3]))
    with _listener(None) as port:
        joining.judge(_found(port, python_version=python), "h:1", "--executor ray", "2.60.0")


def test_an_address_that_is_not_host_port_is_refused() -> None:
    with pytest.raises(ExecutorUnavailable, match="is not HOST:PORT"):
        joining.split("just-a-name", "--executor ray=just-a-name")
    assert joining.split("ray://10.0.0.1:10001", "x") == ("10.0.0.1", 10001)
    assert joining.split("[::1]:6379", "x") == ("::1", 6379)
