"""What every fake CLI shares: scenarios, the report, logging, state, garbage, replay.

Stdlib only, imported by the fake scripts (run with `python -S`), never by flamechase.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STREAMS_DIR = Path(__file__).resolve().parent.parent / "streams"
DEFAULT_REPORT = {"status": "progress", "summary": "fake turn"}


# The variable that points each CLI at a saved account's directory (agents/accounts.py).
_ACCOUNT_VAR = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}


def account() -> str:
    """The saved account the fake runs on (`CLI@NAME/...`: its directory's name), or ""."""
    cli = Path(sys.argv[0]).stem.removeprefix("fake_")
    where = os.environ.get(_ACCOUNT_VAR.get(cli, ""), "")
    return Path(where).name if where and Path(where).parent.name == cli else ""


def scenario(cli: str, ask: int) -> str:
    """The scenario of the ask numbered `ask` (0-based) of this session: on a saved account
    NAME, `FAKE_<CLI>_SCENARIO_<NAME>` when set (each account its own usage window)."""
    name = account().upper().replace("-", "_").replace(".", "_")
    raw = (name and os.environ.get(f"FAKE_{cli.upper()}_SCENARIO_{name}", "")) or ""
    raw = raw or os.environ.get(f"FAKE_{cli.upper()}_SCENARIO", "") or "success"
    items = [s.strip() for s in raw.split(",") if s.strip()] or ["success"]
    return items[min(ask, len(items) - 1)]


def log(cli: str, record: dict[str, Any]) -> None:
    path = os.environ.get(f"FAKE_{cli.upper()}_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def log_start(cli: str, argv: list[str]) -> None:
    """Log argv and the environment flamechase is expected to set."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.startswith("FLAMECHASE_")
        or k in ("CLAUDE_CODE_DISABLE_BACKGROUND_TASKS", "OPENCODE_CONFIG_CONTENT")
    }
    log(cli, {"argv": argv, "env": env, "cwd": os.getcwd()})


def die(cli: str, message: str, code: int = 2) -> None:
    """Fail loudly, the way a CLI refuses a bad command line."""
    sys.stderr.write(f"fake {cli}: {message}\n")
    sys.stderr.flush()
    log(cli, {"died": message})
    raise SystemExit(code)


def emit(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def emit_raw(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def report() -> dict[str, Any]:
    """The report to write: `FAKE_REPORT_<ROLE>` (e.g. FAKE_REPORT_COORDINATOR, for a plan),
    else `FAKE_REPORT_JSON`, else a plain progress report."""
    role = os.environ.get("FLAMECHASE_ROLE", "").upper()
    raw = (role and os.environ.get(f"FAKE_REPORT_{role}")) or os.environ.get("FAKE_REPORT_JSON")
    return json.loads(raw) if raw else dict(DEFAULT_REPORT)


def write_report() -> str | None:
    """Write the report where flamechase said ($FLAMECHASE_REPORT); its path, or None."""
    path = os.environ.get("FLAMECHASE_REPORT")
    if not path:
        return None
    Path(path).write_text(json.dumps(report()))
    return path


def state_dir(cli: str) -> Path:
    base = os.environ.get("FAKE_STATE_DIR") or os.path.join(
        tempfile.gettempdir(), f"flamechase-fakes-{os.getuid()}"
    )
    path = Path(base) / cli
    path.mkdir(parents=True, exist_ok=True)
    return path


def garbage() -> None:
    """Lines a parser must survive: prose, binary, half objects, arrays, deep nesting."""
    emit_raw(b"Warning: this is not JSON at all\n")
    emit_raw(b"\x00\xff\xfe binary \x80\x81\n")
    emit_raw(b'{"type": "assistant", "message": \n')
    emit_raw(b"[1, 2, 3]\n")
    emit_raw(b"{" * 5000 + b"\n")
    emit_raw(b'{"type": 42, "message": null, "result": [], "usage": "many"}\n')
    emit_raw(b"\n")


def hang() -> None:
    """Say nothing, forever (until killed)."""
    while True:
        time.sleep(3600)


def sleep_seconds(name: str) -> float:
    try:
        return float(name.split(":", 1)[1])
    except (IndexError, ValueError):
        return 1.0


def replay_lines(name: str) -> list[bytes]:
    """The lines of a recorded stream: `replay:<file>` (in tests/agents/streams or absolute)."""
    target = name.split(":", 1)[1]
    path = Path(target)
    if not path.is_absolute():
        path = STREAMS_DIR / target
    data = path.read_bytes()
    # The gemini formatter snapshot has placeholders that are not JSON until substituted.
    data = data.replace(b'"<TIMESTAMP>"', b'"2026-01-01T00:00:00.000Z"').replace(
        b"<DURATION>", b"1"
    )
    return data.splitlines()


def read_stdin_text() -> str:
    return sys.stdin.buffer.read().decode("utf-8", "replace")


def take_flags(
    cli: str, args: list[str], valued: set[str], boolean: set[str]
) -> tuple[dict[str, str], set[str], list[str]]:
    """Parse `args` strictly: (flags with values, boolean flags, positionals). Unknown → die."""
    values: dict[str, str] = {}
    flags: set[str] = set()
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-") and arg != "-":
            name, eq, inline = arg.partition("=")
            if name in valued:
                if eq:
                    values[name] = inline
                else:
                    if i + 1 >= len(args):
                        die(cli, f"option {name} needs a value")
                    values[name] = args[i + 1]
                    i += 1
            elif name in boolean and not eq:
                flags.add(name)
            else:
                die(cli, f"unexpected argument {arg!r}")
        else:
            positional.append(arg)
        i += 1
    return values, flags, positional


def window_left(cli: str, name: str) -> float:
    """`limit_for:<seconds>`: the seconds left of a usage window that opens at the first ask
    that meets it (kept in the fake's state, per account) and lasts that long; 0 once over."""
    try:
        span = float(name.split(":", 1)[1])
    except (IndexError, ValueError):
        span = 2.0
    mark = state_dir(cli) / f"window-{account() or 'default'}"
    try:
        ends = float(mark.read_text())
    except (OSError, ValueError):
        ends = time.time() + span
        mark.write_text(repr(ends))
    return max(0.0, ends - time.time())
