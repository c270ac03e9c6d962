"""`-a` agent specs: `[ROLE=]CLI[@ACCOUNT]/MODEL[:EFFORT]`, `exec:PATH`, `acp:COMMAND`, and a
role's alternatives in order, `SPEC|SPEC|...` (engine/failover picks the one a turn runs on).

The grammar is the published runtime's (hmz 0.2.2), so command lines written for it keep working:
a model may contain `/` and `:`, and the effort is whatever follows the *last* `:`. We also accept
positional specs (they fill the flow's roles in declared order), which hmz refuses but its older
docs describe; mixing the two forms is refused because the result would be a guess.

Everything here is pure parsing: nothing checks that a CLI is installed or an effort is on its
ladder (the backends know that). The one exception is `exec:PATH`, whose file is checked now so a
typo fails before a run directory exists rather than at the first turn.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flamechase.errors import RoleError, SpecError

__all__ = [
    "AgentSpec",
    "assign_choices",
    "assign_roles",
    "choice_text",
    "parse_choices",
    "parse_spec",
    "split_agent_args",
    "split_choices",
    "without_roles",
]

GRAMMAR = "CLI[@ACCOUNT]/MODEL[:EFFORT] or exec:PATH"
# Where a `|` starts the next alternative: before something that begins a spec, so a `|` inside
# an exec path (`exec:/tmp/a|b.sh`) or an acp command stays part of it.
_NEXT = re.compile(r"exec:|acp:|[a-z][a-z0-9_-]*(?:@[A-Za-z0-9][A-Za-z0-9_.-]*)?/")

_CLI = re.compile(r"[a-z][a-z0-9_-]*")
# A provider names a directory of saved credentials, so it must be one safe path component.
_PROVIDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Control characters and every Unicode space: none belongs in a CLI, model or effort, and a stray
# one is nearly always a quoting mistake that would otherwise reach a backend's argv.
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\s]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A mistyped spec may be pasted text of any length; keep error messages to one readable line.
_SHOWN = 120


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One parsed agent spec.

    `text` is the spec as written (without `ROLE=`), kept so errors and records can quote what the
    user typed. `path` is set only for `exec` (an absolute executable) and `acp` (a command line,
    without its `-m MODEL`, which becomes `model`).
    """

    text: str
    cli: str
    model: str = ""
    provider: str | None = None
    effort: str | None = None
    path: str | None = None

    @property
    def program(self) -> str:
        """The program that runs: the CLI, or for `acp:` the command's own program name
        (`acp:gemini --acp` keeps gemini's state, and its jail must grant it)."""
        if self.cli == "acp" and self.path:
            return Path(shlex.split(self.path)[0]).name
        return self.cli


def _show(text: str) -> str:
    """`text` quoted for a one-line message: repr escapes control characters, long text is cut."""
    if len(text) > _SHOWN:
        return repr(text[:_SHOWN]) + "…"
    return repr(text)


def _fail(text: str, reason: str) -> SpecError:
    return SpecError(f"agent spec {_show(text)}: {reason}; expected {GRAMMAR}")


def parse_spec(text: str) -> AgentSpec:
    """Parse one spec (no `ROLE=` prefix); SpecError with a one-line message if it is malformed."""
    if text.startswith("exec:"):
        return _parse_exec(text)
    if text.startswith("acp:"):
        return _parse_acp(text)
    if not text:
        raise _fail(text, "the spec is empty")
    if _BAD_CHARS.search(text):
        raise _fail(text, "it contains whitespace or a control character")
    head, slash, rest = text.partition("/")
    if not slash:
        raise _fail(text, "there is no '/' between the CLI and the model")
    cli, at, provider = head.partition("@")
    if not _CLI.fullmatch(cli):
        raise _fail(text, f"the CLI {cli!r} is not a lowercase name like 'claude'")
    if cli in ("exec", "acp"):
        # `exec/x` would give a backend that needs a path but has none.
        raise _fail(text, f"{cli} takes {cli}:{'PATH' if cli == 'exec' else 'COMMAND'}")
    if at and not _PROVIDER.fullmatch(provider):
        raise _fail(text, f"the account after '@' is {'empty' if not provider else 'invalid'}")
    model, colon, effort = rest.rpartition(":")
    if not colon:
        model, effort = rest, ""
    elif not effort:
        raise _fail(text, "the effort after the last ':' is empty")
    if not model:
        raise _fail(text, "the model is empty")
    if model.startswith("/") or model.endswith("/") or "//" in model:
        raise _fail(text, "the model has an empty '/' segment")
    if "," in rest:
        # A comma here is almost always a second spec whose `ROLE=` was forgotten.
        raise _fail(text, "the model or effort contains ','; separate specs with ',ROLE='")
    if "|" in rest:
        raise _fail(
            text, "the model or effort contains '|'; give alternatives as SPEC|SPEC, each whole"
        )
    return AgentSpec(
        text=text,
        cli=cli,
        model=model,
        provider=provider if at else None,
        effort=None if effort in ("", "auto") else effort,
    )


def split_choices(text: str) -> list[str]:
    """`SPEC|SPEC|...` cut into its specs' texts, unparsed (what a run records for a role)."""
    cuts = [0]
    for i, ch in enumerate(text):
        if ch == "|" and _NEXT.match(text, i + 1):
            cuts.append(i + 1)
    return [text[a : b - 1] for a, b in itertools.pairwise(cuts)] + [text[cuts[-1] :]]


def parse_choices(text: str) -> tuple[AgentSpec, ...]:
    """A role's agents in order of preference: `SPEC|SPEC|...` (one spec: no alternatives).
    SpecError for a malformed one, or one given twice."""
    specs = tuple(parse_spec(part) for part in split_choices(text))
    seen: set[str] = set()
    for spec in specs:
        if spec.text in seen:
            raise SpecError(
                f"agent spec {_show(text)}: {spec.text!r} is given twice among the alternatives"
            )
        seen.add(spec.text)
    return specs


def choice_text(specs: tuple[AgentSpec, ...]) -> str:
    """The alternatives as written on a command line (what a run records for the role)."""
    return "|".join(spec.text for spec in specs)


def _parse_exec(text: str) -> AgentSpec:
    """`exec:PATH`: the path is resolved now so later cwd changes cannot redirect it."""
    raw = text[len("exec:") :]
    if not raw:
        raise _fail(text, "the path after 'exec:' is empty")
    # Spaces are legal in paths; control characters are not worth supporting and break messages.
    if _CONTROL.search(raw):
        raise _fail(text, "the path contains a control character")
    try:
        path = Path(raw).expanduser().resolve()
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise SpecError(f"agent spec {_show(text)}: {_show(raw)} does not exist") from None
    except (OSError, RuntimeError, ValueError) as exc:
        # RuntimeError: unknown ~user or a symlink loop; ValueError: an unusable path string.
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise SpecError(
            f"agent spec {_show(text)}: cannot use {_show(raw)}: {reason[:_SHOWN]}"
        ) from None
    if not stat.S_ISREG(mode):
        raise SpecError(f"agent spec {_show(text)}: {_show(str(path))} is not a regular file")
    if not os.access(path, os.X_OK):
        raise SpecError(
            f"agent spec {_show(text)}: {_show(str(path))} is not executable (chmod +x it)"
        )
    return AgentSpec(text=text, cli="exec", path=str(path))


def _parse_acp(text: str) -> AgentSpec:
    """`acp:COMMAND`: checked to split with shlex now, so a quoting slip fails before the run."""
    command = text[len("acp:") :]
    if _CONTROL.search(command):
        raise _fail(text, "the command contains a control character")
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise _fail(text, f"the command does not split into words ({exc})") from None
    if not argv:
        raise _fail(text, "the command after 'acp:' is empty")
    model, argv = _acp_model(text, argv)
    return AgentSpec(text=text, cli="acp", model=model, path=shlex.join(argv))


def _acp_model(text: str, argv: list[str]) -> tuple[str, list[str]]:
    """`-m MODEL` / `--model MODEL` / `--model=MODEL` after the program: the model flamechase
    selects through the protocol (and prices by); removed from the command, which may not
    take such a flag (`opencode acp` does not)."""
    model = ""
    out = argv[:1]
    words = iter(argv[1:])
    for word in words:
        if word in ("-m", "--model"):
            model = next(words, "")
            if not model:
                raise _fail(text, f"{word} needs a model after it")
        elif word.startswith("--model="):
            model = word.partition("=")[2]
            if not model:
                raise _fail(text, "--model= needs a model")
        else:
            out.append(word)
    return model, out


def _role_prefix(item: str) -> tuple[str, str] | None:
    """(role, spec) when `item` starts with `IDENT=`; None for a positional spec.

    An identifier cannot contain `/` or `:`, so `exec:/x/a=b` stays positional by construction.
    """
    name, eq, spec = item.partition("=")
    if eq and name.isidentifier():
        return name, spec
    return None


def split_agent_args(values: list[str]) -> list[tuple[str | None, str]]:
    """Split every `-a` value into (role or None, spec) items.

    A comma separates items only where `ROLE=` follows it, so commas inside an exec path or a
    model survive: `-a a=claude/m,b=codex/x` is two items, `-a exec:/tmp/a,b.sh` is one.
    """
    out: list[tuple[str | None, str]] = []
    for value in values:
        start = 0
        for i, ch in enumerate(value):
            if ch == "," and _role_prefix(value[i + 1 :]) is not None:
                out.append(_item(value[start:i]))
                start = i + 1
        out.append(_item(value[start:]))
    return out


def _item(text: str) -> tuple[str | None, str]:
    named = _role_prefix(text)
    return named if named is not None else (None, text)


def without_roles(roles: Iterable[Any]) -> dict[str, str]:
    """role name -> the params that run its flow without it, of the flow's described roles
    (`flow.Role`: `name`, `without`)."""
    return {r.name: r.without for r in roles if getattr(r, "without", "")}


def _roles(n: int) -> str:
    return f"{n} agent role{'' if n == 1 else 's'}"


def _quoted(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)


def assign_roles(
    items: list[tuple[str | None, str]],
    roles: list[str],
    flow: str,
    without: Mapping[str, str] | None = None,
) -> dict[str, AgentSpec]:
    """Every role of `flow` with its (first) agent, every alternative checked."""
    chosen = assign_choices(items, roles, flow, without)
    return {role: specs[0] for role, specs in chosen.items()}


def assign_choices(
    items: list[tuple[str | None, str]],
    roles: list[str],
    flow: str,
    without: Mapping[str, str] | None = None,
) -> dict[str, tuple[AgentSpec, ...]]:
    """Map every role of `flow` to its parsed specs (its alternatives), in declared role order.

    `roles` may repeat a role (several lanes share their actors); each distinct role needs exactly
    one agent. Structure is checked before any spec is parsed, so a missing role is reported
    even when another spec also has a typo. `without`: for a role the flow can run without,
    the params that do so (said with a missing role).
    """
    declared = list(dict.fromkeys(roles))
    named = [(role, spec) for role, spec in items if role is not None]
    positional = [spec for role, spec in items if role is None]
    if named and positional:
        raise RoleError(
            "-a: mixing ROLE=SPEC and positional specs is not allowed; name every role or none"
        )
    chosen: dict[str, str] = {}
    if named:
        for role, spec in named:
            if role not in declared:
                available = _quoted(declared) if declared else "none"
                raise RoleError(
                    f"{flow} has no agent role {role!r}; available roles are {available}"
                )
            if role in chosen:
                raise RoleError(f"role {role!r} is given twice; give each role one -a")
            chosen[role] = spec
    else:
        if len(positional) > len(declared):
            raise RoleError(
                f"{flow} has {_roles(len(declared))} ({_quoted(declared) or 'none'}) "
                f"but {len(positional)} positional -a specs were given"
            )
        chosen = dict(zip(declared, positional, strict=False))
    missing = [role for role in declared if role not in chosen]
    if missing:
        ways = [
            f"{role!r}: {(without or {})[role]}" for role in missing if (without or {}).get(role)
        ]
        instead = f"; or run without {'; '.join(ways)}" if ways else ""
        raise RoleError(
            f"{flow} needs an agent for {_quoted(missing)}; specify each with "
            f"-a ROLE=CLI[@ACCOUNT]/MODEL[:EFFORT] or -a exec:PATH{instead}"
        )
    return {role: parse_choices(chosen[role]) for role in declared}
