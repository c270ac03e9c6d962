"""What every backend hands an agent: the FLAMECHASE_* environment and the turn's files.

One definition of the contract documented in the README, so `exec:` scripts and CLI agents
see exactly the same variables and files.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from flamechase.agents.backend import TurnRequest
from flamechase.fsutil import atomic_write

# Turn variables an engine running *inside* an agent turn must not pass on from its own turn.
INHERITED_TURN_VARS = (
    "FLAMECHASE_REPAIR",
    "FLAMECHASE_INBOX",
    "FLAMECHASE_ARTIFACTS",
    "FLAMECHASE_CHECKPOINT",
    "FLAMECHASE_REQUESTS",
    "FLAMECHASE_PROC_TOKEN",
)


def agent_env(
    request: TurnRequest, extra: Mapping[str, str] | None = None, repair: str | None = None
) -> dict[str, str]:
    """Ours, `extra` (a CLI's own settings), the turn's FLAMECHASE_* variables, then
    `request.env` (which wins), and FLAMECHASE_REPAIR on a repair."""
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_TURN_VARS}
    if extra:
        env.update(extra)
    env.update(
        {
            "FLAMECHASE_RUN_ID": request.run_id,
            "FLAMECHASE_RUN_DIR": str(request.run_dir),
            "FLAMECHASE_FLOW": request.flow,
            "FLAMECHASE_ROLE": request.role,
            "FLAMECHASE_LANE": request.lane,
            "FLAMECHASE_TURN": str(request.turn),
            "FLAMECHASE_ATTEMPT": str(request.attempt),
            "FLAMECHASE_WORKSPACE": str(request.workspace),
            "FLAMECHASE_PROMPT": str(request.prompt_path),
            "FLAMECHASE_REPORT": str(request.report_path),
            "FLAMECHASE_USAGE": str(request.usage_path),
            # The agent starts in the workspace; programs that take their project directory
            # from $PWD (opencode) must not see the engine's own directory instead.
            "PWD": str(request.workspace),
        }
    )
    env.update(request.env)
    if repair is not None:
        # The reason may quote agent output; an environment value cannot hold NUL.
        env["FLAMECHASE_REPAIR"] = repair.replace("\0", "\\0")
    return env


def prepare_io(request: TurnRequest, prompt: str) -> None:
    """Before an ask: make io_dir, remove a stale report and usage file (so a repair must
    write new ones), and write the prompt where $FLAMECHASE_PROMPT says (0600)."""
    request.io_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    # The prompt is rewritten; removing it first also clears anything odd planted there.
    for stale in (request.report_path, request.usage_path, request.prompt_path):
        _remove(stale)
    write_private(request.prompt_path, prompt.encode("utf-8", "replace"))


def _remove(path: Path) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` as a fresh 0600 file (never through a planted link)."""
    atomic_write(path, data, 0o600, durable=False, replace_odd=True)


def turn_dirs(request: TurnRequest) -> list[str]:
    """The turn's own directories outside its workspace that the agent must write: the io dir
    (report, usage), and the flow's artifact root and checkpoint directory when it has them."""
    dirs = [str(request.io_dir)]
    artifacts = request.env.get("FLAMECHASE_ARTIFACTS")
    if artifacts:
        dirs.append(artifacts)
    checkpoint = request.env.get("FLAMECHASE_CHECKPOINT")
    if checkpoint:
        dirs.append(os.path.dirname(checkpoint))
    return list(dict.fromkeys(d for d in dirs if os.path.isdir(d)))
