"""Joining a Ray cluster: bounded in time, answered in one line, Ray kept quiet.

`ray.init` on an address where something else listens retries for ever (Ray's GCS client
waits 40 s a try, twenty tries), prints its own warnings on this terminal meanwhile, and holds
Ctrl-C while it waits in C++; a head that advertises an address this machine cannot reach is
retried for minutes. So before Ray is asked to join, each thing it would wait on is asked here
first, each with its own bound:

    the address        an HTTP URL (a dashboard's) is refused as such, at once
    TCP                nothing listening, at once; no answer in CONNECT_SECONDS
    HTTP/2             Ray's GCS is a gRPC server: its first bytes are an HTTP/2 SETTINGS
                       frame; anything else (an HTTP/1 server, silence) is not Ray
    the GCS            asked by a child process (`python -m ...joining ADDRESS`, killed
                       after SURVEY_SECONDS or on Ctrl-C, its output kept in the log): the
                       cluster's Ray and Python versions, its nodes, the ones on this machine
    the node to join   the one on this machine Ray would attach to; its advertised address
                       must answer (CONNECT_SECONDS)

Only then does `ray.init` run, with this process's stderr (fd 2, where Ray's C++ writes)
sent to the log for its duration. Nothing here imports Ray but the child and `init`.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from flamechase.errors import ExecutorUnavailable
from flamechase.store import home

CONNECT_SECONDS = 3.0  # a TCP connect, or the first bytes of an answer
SURVEY_SECONDS = 20.0  # the child that asks the GCS: Ray's import and three requests
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
HINT = (
    "start one with `ray start --head` (see README, Scaling out) or give --executor ray=HOST:PORT"
)


def log_path() -> Path:
    """Where Ray's own lines go while this machine joins a cluster (never the terminal)."""
    return home.state_home() / "ray" / "join.log"


def target(address: str | None, env: Mapping[str, str]) -> tuple[str, str]:
    """The address to join and how the user gave it (for messages)."""
    if address:
        return address, f"--executor ray={address}"
    if env.get("RAY_ADDRESS"):
        return env["RAY_ADDRESS"], f"RAY_ADDRESS={env['RAY_ADDRESS']}"
    return "auto", "--executor ray"


def refuse(given: str, why: str, hint: str = HINT) -> ExecutorUnavailable:
    return ExecutorUnavailable(f"{given}: {why}; {hint}")


def split(address: str, given: str) -> tuple[str, int]:
    """HOST and PORT of `address` (`ray://` dropped); refused when it is not one."""
    if address.lower().startswith(("http://", "https://")):
        raise refuse(
            given,
            "that is an HTTP URL (a Ray dashboard's, for `ray job submit`), not a "
            "cluster's address",
            "give the head's HOST:PORT (`ray start --head --port`, 6379 by default)",
        )
    host, _, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or "/" in host:
        raise refuse(given, f"{address} is not HOST:PORT")
    return host, int(port)


def local_address(given: str) -> str:
    """The cluster `ray start` runs on this machine (`auto`), as HOST:PORT."""
    try:
        from ray._private.services import canonicalize_bootstrap_address
    except ImportError:  # Ray moved it: ray.init finds it itself
        return "auto"
    try:
        resolved = canonicalize_bootstrap_address("auto")
    except (ConnectionError, ValueError) as exc:
        raise refuse(given, f"no Ray cluster runs on this machine ({_first(exc, 200)})") from None
    if resolved is None:
        raise refuse(given, "no Ray cluster runs on this machine")
    return str(resolved)


def speaks_grpc(host: str, port: int, given: str) -> None:
    """Refused unless what listens at HOST:PORT opens an HTTP/2 connection (gRPC: Ray)."""
    where = f"{host}:{port}"
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_SECONDS)
    except TimeoutError:
        raise refuse(given, f"nothing answers at {where} within {CONNECT_SECONDS:g} s") from None
    except OSError as exc:
        raise refuse(given, f"nothing answers at {where} ({exc.strerror or exc})") from None
    with sock:
        try:
            sock.sendall(HTTP2_PREFACE)
            first = sock.recv(64)
        except TimeoutError:
            raise refuse(
                given,
                f"something listens at {where} but says nothing within "
                f"{CONNECT_SECONDS:g} s: not a Ray cluster",
            ) from None
        except OSError as exc:
            first = f"{exc.strerror or exc}".encode()
    # An HTTP/2 server answers with a SETTINGS frame: 3 bytes of length, type 4.
    if len(first) >= 9 and first[3] == 4:
        return
    said = first[:40].decode("ascii", "replace").splitlines()[0] if first else "nothing"
    what = "an HTTP server" if first.startswith(b"HTTP/") or b"<html" in first.lower() else "it"
    raise refuse(
        given,
        f"{what} at {where} is not a Ray cluster (it answered {said!r} where Ray's GCS "
        "speaks gRPC)",
    )


def survey(address: str, given: str, log: Path) -> dict[str, Any]:
    """What the GCS at `address` says of itself, asked by a child process this one can
    bound and interrupt (Ray's client waits in C++). Its output goes to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", __name__, address],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=out,
            start_new_session=True,
        )
        try:
            answer, _ = proc.communicate(timeout=SURVEY_SECONDS)
        except BaseException as exc:  # the bound, or Ctrl-C: the wait ends now
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise refuse(
                    given,
                    f"{address} speaks gRPC but gave no answer as a Ray cluster's GCS "
                    f"within {SURVEY_SECONDS:g} s (Ray's log: {log})",
                ) from None
            raise
    try:
        found: dict[str, Any] = json.loads(answer.decode("utf-8", "replace"))
    except ValueError:
        raise refuse(
            given, f"{address} did not answer as a Ray cluster's GCS (Ray's log: {log})"
        ) from None
    if "error" in found:
        raise refuse(given, f"{address} is not a Ray cluster that answers ({found['error']})")
    return found


def judge(found: Mapping[str, Any], address: str, given: str, ray_version: str) -> None:
    """Refused when this machine cannot join the cluster `found` describes."""
    meta = found.get("meta") or {}
    theirs = meta.get("ray_version")
    if theirs and theirs != ray_version:
        raise refuse(
            given,
            f"the cluster at {address} runs Ray {theirs}, this machine Ray {ray_version}",
            "install the same Ray (and Python) on every node and here",
        )
    python = meta.get("python_version")
    ours = ".".join(map(str, sys.version_info[:3]))
    level = 2 if os.environ.get("RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL") == "minor" else 3
    if python and python.split(".")[:level] != ours.split(".")[:level]:
        raise refuse(
            given,
            f"the cluster at {address} runs Python {python}, this machine Python {ours}",
            "install the same Python (and Ray) on every node and here",
        )
    nodes = [n for n in found.get("nodes", []) if n.get("alive")]
    if not nodes:
        raise refuse(given, f"the cluster at {address} has no live node")
    here = [n for n in nodes if n["id"] in set(found.get("local", []))]
    if not here:
        raise refuse(
            given,
            f"no node of the cluster at {address} runs on this machine, and Ray joins "
            "a cluster through one",
            f"run `ray start --address={address}` here first (see README, Scaling out)",
        )
    node = next((n for n in here if n.get("head")), here[0])
    where = f"{node['address']}:{node['port']}"
    try:
        socket.create_connection((node["address"], node["port"]), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        why = (
            f"no answer within {CONNECT_SECONDS:g} s"
            if isinstance(exc, TimeoutError)
            else exc.strerror or str(exc)
        )
        raise refuse(
            given,
            f"the node this machine joins through advertises {where}, which does not "
            f"answer from here ({why})",
            "start it with a --node-ip-address this machine can reach",
        ) from None


@contextlib.contextmanager
def quiet(log: Path) -> Iterator[None]:
    """This process's stderr (fd 2: Ray's C++ writes there) and Ray's loggers into `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def mute_ray_logging(log: Path) -> None:
    """Ray's Python loggers write to `log` from now on, never to the terminal (again after
    `ray.init`, which sets its own handlers up)."""
    for name in ("ray", "ray.util.client"):
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            if not isinstance(old, logging.FileHandler):
                logger.removeHandler(old)
        if not logger.handlers:
            logger.addHandler(logging.FileHandler(log, encoding="utf-8"))
        logger.propagate = False


def join(address: str | None) -> str:
    """Join the cluster (`address`, else RAY_ADDRESS, else the one `ray start` runs on this
    machine); its GCS address. ExecutorUnavailable (exit 2, nothing written) when it cannot
    be joined, within CONNECT_SECONDS + SURVEY_SECONDS + CONNECT_SECONDS."""
    import ray

    wanted, given = target(address, os.environ)
    log = log_path()
    resolved = local_address(given) if wanted == "auto" else wanted
    if resolved != "auto":
        host, port = split(resolved, given)
        speaks_grpc(host, port, given)
        if not resolved.startswith("ray://"):  # a Ray Client server is no GCS
            judge(survey(resolved, given, log), resolved, given, ray.__version__)
    mute_ray_logging(log)
    try:
        with quiet(log):
            ctx = ray.init(
                address=resolved,
                log_to_driver=False,
                logging_level=logging.WARNING,
                namespace="flamechase",
            )
        mute_ray_logging(log)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        raise refuse(
            given, f"Ray could not join {resolved} ({_first(exc, 300)}; Ray's log: {log})"
        ) from None
    return str(getattr(ctx, "address_info", {}).get("gcs_address", resolved))


def _first(exc: BaseException, limit: int) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:limit]


def _survey_main(address: str) -> None:
    """The child: what the GCS says, as one JSON line on stdout (Ray's lines on stderr)."""
    try:
        # Ray's internals, untyped (and private: a Ray that moves them fails here, in one
        # line, rather than hanging).
        raylet: Any = importlib.import_module("ray._raylet")
        services: Any = importlib.import_module("ray._private.services")
        client = raylet.GcsClient(address=address)
        raw = client.internal_kv_get(b"CLUSTER_METADATA", namespace=b"cluster")
        nodes = client.get_all_node_info(timeout=SURVEY_SECONDS / 2)
        local = sorted(services.find_node_ids())
    except Exception as exc:  # one line for the parent, whatever Ray raised
        print(json.dumps({"error": f"{type(exc).__name__}: {_first(exc, 200)}"}), flush=True)
        return
    out = {
        "meta": json.loads(raw) if raw else {},
        "nodes": [
            {
                "id": nid.hex(),
                "address": info.node_manager_address,
                "port": info.node_manager_port,
                "head": bool(info.is_head_node),
                "alive": info.state == 0,  # GcsNodeState.ALIVE
            }
            for nid, info in nodes.items()
        ],
        "local": local,
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    _survey_main(sys.argv[1])
