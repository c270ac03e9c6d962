"""`flamechase profile set|show|list|rm`: the agents and params `run FLOW` and the prompt use.

A profile is what you would type after `exec -f FLOW`: its `-a` and `-p` arguments, kept per
flow in `profiles.yaml` in your config directory (platformdirs: `$XDG_CONFIG_HOME/flamechase`
on Linux). They are checked when set (agent specs, roles, params, a budget), so a run started
from a profile fails only for what changed since (a CLI uninstalled, the flow's roles).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from flamechase.errors import ProfileError
from flamechase.text import echo

CONFIG_VAR = "FLAMECHASE_CONFIG"


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    agents: list[str] = []
    params: list[str] = []


def config_dir() -> Path:
    import os

    explicit = os.environ.get(CONFIG_VAR)
    if explicit:
        return Path(explicit).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_config_path("flamechase"))


def profiles_file() -> Path:
    return config_dir() / "profiles.yaml"


def load_all() -> dict[str, Profile]:
    path = profiles_file()
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ProfileError(
            f"profiles file {path} is unreadable ({exc.__class__.__name__}); fix or delete it"
        ) from None
    if not isinstance(data, dict):
        raise ProfileError(f"profiles file {path} is not a mapping of flow: profile")
    try:
        return {str(k): Profile.model_validate(v) for k, v in data.items()}
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ProfileError(
            f"profiles file {path}: {'.'.join(map(str, err['loc']))}: {err['msg']}"
        ) from None


def get(flow: str) -> Profile:
    found = load_all().get(flow)
    if found is None:
        raise ProfileError(
            f"no profile for {flow}; make one: flamechase profile set {flow} "
            "-a ROLE=SPEC ... -p budget.duration=2h"
        )
    return found


def _save(profiles: dict[str, Profile]) -> Path:
    from flamechase.fsutil import atomic_write
    from flamechase.store.home import ensure_private_dir

    path = profiles_file()
    ensure_private_dir(path.parent)
    data = {k: v.model_dump() for k, v in sorted(profiles.items())}
    atomic_write(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode())
    return path


def check(flow_ref: str, profile: Profile) -> None:
    """Refuse a profile `exec` would refuse: bad specs, unknown or missing roles, bad params
    (loads the flow: runs its code). No budget is allowed, as for `exec`: the run says so."""
    from flamechase.agents.spec import assign_roles, split_agent_args, without_roles
    from flamechase.config import parse_settings, split_kv
    from flamechase.loader import load_flow

    flow = load_flow(flow_ref)
    _, params = parse_settings(dict(split_kv(profile.params)), flow.Params, flow.name)
    without = without_roles(flow.describe_roles(params))
    assign_roles(split_agent_args(profile.agents), flow.roles(params), flow.name, without)


def save(flow_ref: str, profile: Profile) -> Path:
    """Check `profile` as exec would, then keep it as FLOW's; the file it is in."""
    check(flow_ref, profile)
    return _save({**load_all(), flow_ref: profile})


@click.group("profile")
def group() -> None:
    """Agents and budgets per flow, for `flamechase run FLOW TASK` and the prompt."""


@group.command("set")
@click.argument("flow_ref", metavar="FLOW")
@click.option(
    "-a",
    "--agent",
    "agents",
    multiple=True,
    metavar="[ROLE=]SPEC[,...]",
    help="as for exec: an agent for a role",
)
@click.option(
    "-p",
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE[,...]",
    help="as for exec: a flow param or budget.*",
)
def set_command(flow_ref: str, agents: tuple[str, ...], params: tuple[str, ...]) -> int:
    """Keep FLOW's agents and params (checked now, as exec would check them)."""
    path = save(flow_ref, Profile(agents=list(agents), params=list(params)))
    echo(f"profile for {flow_ref} saved in {path}")
    return 0


@group.command("show")
@click.argument("flow_ref", metavar="FLOW")
def show_command(flow_ref: str) -> int:
    """The profile of FLOW, as the arguments it stands for."""
    echo(command_line(flow_ref, get(flow_ref)))
    return 0


@group.command("list")
def list_command() -> int:
    """Every profile."""
    for flow_ref, profile in load_all().items():
        echo(command_line(flow_ref, profile))
    return 0


@group.command("rm")
@click.argument("flow_ref", metavar="FLOW")
def rm_command(flow_ref: str) -> int:
    """Forget FLOW's profile."""
    profiles = load_all()
    if profiles.pop(flow_ref, None) is None:
        raise ProfileError(f"no profile for {flow_ref}")
    _save(profiles)
    echo(f"profile for {flow_ref} removed")
    return 0


def command_line(flow_ref: str, profile: Profile) -> str:
    import shlex

    words = ["-f", flow_ref]
    for a in profile.agents:
        words += ["-a", a]
    for p in profile.params:
        words += ["-p", p]
    return "exec " + shlex.join(words)
