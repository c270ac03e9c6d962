"""The real CLIs, as pinned in package.json, each configured to talk to the scripted server.

`realcli_env(home, server)` writes every CLI's own settings into a private HOME (model
endpoint on 127.0.0.1, API key, telemetry/update checks off) and returns the environment a
`flamechase` run needs: PATH = the pinned CLIs + the system, HTTP(S)_PROXY = the server (so
anything a CLI tries to reach beyond loopback is refused and logged), nothing of the
caller's own CLI settings.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
BIN = HERE / "node_modules" / ".bin"
CLIS = ("claude", "codex", "gemini", "opencode")
PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
    "opencode": "opencode-ai",
}
# The spec each CLI runs under in the tests: models the CLIs (or our price table) can price.
SPECS = {
    "claude": "claude/claude-sonnet-4-5",
    "codex": "codex/gpt-5",
    "gemini": "gemini/gemini-2.5-pro",
    "opencode": "opencode/scripted/model-1",
}
# opencode prices from its own config: USD per million tokens.
OPENCODE_COST = {"input": 2.0, "output": 10.0, "cache_read": 0.2, "cache_write": 2.5}
REQUIRED_VAR = "FLAMECHASE_REALCLI_REQUIRED"  # CI sets it: a missing CLI fails, never skips

# The caller's own settings must not reach the CLIs under test (a real key, a real endpoint).
_SCRUB = (
    "ANTHROPIC_",
    "CLAUDE_",
    "OPENAI_",
    "CODEX_",
    "GEMINI_",
    "GOOGLE_",
    "OPENCODE_",
    "XDG_",
    "FAKE_",
    "IS_SANDBOX",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "NODE_OPTIONS",
)


def pinned() -> dict[str, str]:
    deps: dict[str, str] = json.loads((HERE / "package.json").read_text())["dependencies"]
    return {cli: deps[package] for cli, package in PACKAGES.items()}


def unavailable(cli: str) -> str | None:
    """Why `cli` cannot run here, or None."""
    if not (BIN / cli).exists():
        return (
            f"{cli} {pinned()[cli]} is not installed: run `npm install --prefix "
            "tests/realcli --no-save` (.ci/run does)"
        )
    if shutil.which("node") is None and cli in ("codex", "gemini"):
        return f"{cli} needs node on PATH"
    return None


def require(cli: str) -> None:
    """Skip the test with the reason when `cli` cannot run here (fail instead under CI)."""
    why = unavailable(cli)
    if why is None:
        return
    if os.environ.get(REQUIRED_VAR):
        pytest.fail(why)
    pytest.skip(why)


def realcli_env(home: Path, server_url: str) -> dict[str, str]:
    """A private HOME with every CLI pointed at `server_url`, and the env to run them."""
    home.mkdir(parents=True, exist_ok=True)

    _codex(home, server_url)
    _gemini(home)
    _opencode(home, server_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    system_path = os.pathsep.join(
        p for p in ("/usr/local/bin", "/usr/bin", "/bin") if os.path.isdir(p)
    )
    tmp = home.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            # codex will not make its sandbox helper under the temp dir, which holds HOME here.
            "TMPDIR": str(tmp),
            "PATH": os.pathsep.join([str(BIN), str(Path(sys.executable).parent), system_path]),
            "FLAMECHASE_RETRY_DELAYS": "0,0,0",
            # Anything that honours a proxy and leaves loopback is refused by the server, logged.
            "HTTPS_PROXY": server_url,
            "HTTP_PROXY": server_url,
            "ALL_PROXY": server_url,
            "https_proxy": server_url,
            "http_proxy": server_url,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            # claude: the endpoint, a key, no telemetry, no updater, no retries of its own (the
            # retry tests need its errors to reach flamechase).
            "ANTHROPIC_BASE_URL": server_url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            # codex reads its key from the provider's env_key (config.toml).
            "SCRIPTED_API_KEY": "sk-scripted",
            # gemini
            "GEMINI_API_KEY": "scripted-gemini-key",
            "GOOGLE_GEMINI_BASE_URL": server_url,
            # opencode: no models.dev catalogue, no plugin installs, no updates, no LSP downloads.
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "NO_COLOR": "1",
        }
    )
    return env


def codex_config(server_url: str) -> str:
    return "\n".join(
        [
            'model = "gpt-5"',
            'model_provider = "scripted"',
            "check_for_update_on_startup = false",
            "[model_providers.scripted]",
            'name = "scripted"',
            f'base_url = "{server_url}/v1"',
            'env_key = "SCRIPTED_API_KEY"',
            'wire_api = "responses"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "[analytics]",
            "enabled = false",
            # Each of these reaches github.com or chatgpt.com at start-up.
            "[features]",
            "plugins = false",
            "remote_plugin = false",
            "apps = false",
            "tool_suggest = false",
            "in_app_updates = false",
            "",
        ]
    )


def _codex(home: Path, server_url: str) -> None:
    config = home / ".codex"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text(codex_config(server_url))


def _gemini(home: Path) -> None:
    config = home / ".gemini"
    config.mkdir(exist_ok=True)
    settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {
            "disableAutoUpdate": True,
            "disableUpdateNag": True,
            # One attempt per request: errors reach flamechase, which retries them.
            "maxAttempts": 1,
        },
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    (config / "settings.json").write_text(json.dumps(settings, indent=1))


def opencode_config(server_url: str) -> dict[str, object]:
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "scripted",
                "options": {"baseURL": f"{server_url}/v1", "apiKey": "sk-scripted"},
                "models": {"model-1": {"name": "model-1", "cost": OPENCODE_COST}},
            }
        },
    }


def _opencode(home: Path, server_url: str) -> None:
    config = home / ".config" / "opencode"
    config.mkdir(parents=True, exist_ok=True)
    (config / "opencode.json").write_text(json.dumps(opencode_config(server_url), indent=1))
    # opencode installs @opencode-ai/plugin from the npm registry into every config directory
    # unless node_modules exists and the lock file lists what package.json asks for.
    deps = {"@opencode-ai/plugin": "*"}
    (config / "node_modules").mkdir(exist_ok=True)
    (config / "package.json").write_text(json.dumps({"dependencies": deps}))
    (config / "package-lock.json").write_text(
        json.dumps({"lockfileVersion": 3, "packages": {"": {"dependencies": deps}}})
    )
