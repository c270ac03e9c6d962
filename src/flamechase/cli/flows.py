"""`flamechase flows list|show|install|uninstall`: built-in, installed and indexed flows."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from flamechase.errors import FlowIndexError
from flamechase.text import echo, echo_json

if TYPE_CHECKING:
    from flamechase.flow import Flow, FlowParams, Role
    from flamechase.loader.index import Entry

INDEX_HELP = (
    "a flow index: the name of one (official, or added with `flows index add`), a YAML/JSON "
    "file, a directory of flow.yaml, or git+URL (default: $FLAMECHASE_FLOW_INDEX, else official)"
)


@click.group("flows")
def group() -> None:
    """Flows you can run: built-in, installed from an index, or from installed packages.

    Loading a flow runs its code: install and run only flows you trust. A flow from git or an
    index runs only from the commit it was pinned to.
    """


def _index_entries(source: str | None, refresh: bool = False) -> tuple[str | None, list[Entry]]:
    from flamechase.loader import index, indexes, official

    source = source or index.default_source()
    if source is None:
        return None, []
    source = indexes.source_of(source)
    if source == official.NAME:  # its releases are the built-ins, listed as such
        return None, []
    return source, index.read(source, refresh=refresh)


def _rows(index_source: str | None) -> tuple[list[dict[str, Any]], str | None]:
    from flamechase.flows import BUILTIN, VARIANTS
    from flamechase.loader import installed, load_flow
    from flamechase.loader.resolve import entry_points

    rows: list[dict[str, Any]] = []
    for name in [*sorted(BUILTIN), *sorted(VARIANTS)]:
        flow = load_flow(name)
        rows.append(
            {"name": name, "version": flow.version, "from": "built-in", "description": flow.summary}
        )
    have = {r["name"] for r in rows}
    for rec in installed.all_installed():
        if rec.code_hash:  # a release of the official index: the built-in rows are its code
            for row in rows:
                if row["name"] == rec.name or row["name"] in rec.variants:
                    row["from"] = f"built-in, installed from official (code {rec.code_hash[:12]})"
            continue
        row = {
            "name": rec.name,
            "version": rec.version,
            "from": f"installed ({rec.url}@{rec.commit[:12]})",
            "description": rec.description,
            "commit": rec.commit,
        }
        for shadowed in (r for r in rows if r["name"] == rec.name and r["from"] == "built-in"):
            # Both are listed under one name: say which one `-f NAME` runs (the installed).
            shadowed["from"] = f"built-in, not run: -f {rec.name} runs the installed one"
            shadowed["runs"], row["runs"] = False, True
            row["from"] += f", run by -f {rec.name}"
        rows.append(row)
    have |= {r["name"] for r in rows}
    for point in entry_points():  # named, not imported: listing runs no flow's code
        dist = point.dist
        rows.append(
            {
                "name": point.name,
                "version": dist.version if dist else "",
                "from": f"package {dist.name if dist else '?'} ({point.value})",
                "description": "",
            }
        )
    problem = None
    try:
        source, entries = _index_entries(index_source)
    except FlowIndexError as exc:
        source, entries, problem = None, [], str(exc)
    have |= {r["name"] for r in rows}
    for entry in entries:
        mark = "installed" if entry.name in have else "index"
        rows.append(
            {
                "name": entry.name,
                "version": entry.version,
                "from": f"{mark}: {source}",
                "description": entry.description,
                "commit": entry.commit,
            }
        )
    return rows, problem


@group.command("list")
@click.option("--index", "index_source", metavar="INDEX", help=INDEX_HELP)
@click.option("--json", "as_json", is_flag=True, help="one JSON list")
def list_command(index_source: str | None, as_json: bool) -> int:
    """Built-in flows with their versions, installed flows, flows of installed packages, and
    the flows an index offers."""
    rows, problem = _rows(index_source)
    if as_json:
        echo_json(json.dumps(rows, indent=1))
    else:
        width = max(len(r["name"]) for r in rows)
        vwidth = max(len(r["version"]) for r in rows)
        for r in rows:
            echo(
                f"{r['name']:<{width}}  {r['version']:<{vwidth}}  {r['from']}"
                + (f"  {r['description']}" if r["description"] else "")
            )
    if problem:
        echo(f"flamechase flows: {problem}", err=True)
    return 0


@group.command("show")
@click.argument("name")
@click.option("--index", "index_source", metavar="INDEX", help=INDEX_HELP)
def show_command(name: str, index_source: str | None) -> int:
    """What a flow is: roles, params, where it comes from (loads it: runs its code), or an
    index's entry for a flow not installed."""
    from flamechase.errors import FlowNotFound
    from flamechase.loader import flow_identity, load_flow

    try:
        flow = load_flow(name)
    except FlowNotFound:
        source, entries = _index_entries(index_source)
        same = [e for e in entries if e.name == name.partition("@")[0]]
        if not same:
            raise
        _show_entries(same, source or "")
        return 0
    for line in describe(flow, flow_identity(flow, name)[0]):
        echo(line)
    others = _variants_of(name, flow)
    if others:
        echo("variants: " + ", ".join(others))
    return 0


def _variants_of(ref: str, flow: Flow[Any]) -> list[str]:
    """`NAME:VARIANT`s of a built-in (the VARIANTS table), or the other flows in the module
    of a flow named by name (installed, entry point)."""
    import sys

    from flamechase.flows import BUILTIN, VARIANTS
    from flamechase.loader.modules import flows_in

    if ref in BUILTIN:
        return sorted(k for k in VARIANTS if k.startswith(ref + ":"))
    if ":" in ref or "/" in ref or ref.startswith("git+"):
        return []
    module = sys.modules[type(flow).__module__]
    return [f"{ref}:{n}" for n in flows_in(module) if getattr(module, n) is not flow]


_LIMITS = (
    ("ge", ">="),
    ("gt", ">"),
    ("le", "<="),
    ("lt", "<"),
    ("min_length", "length >="),
    ("max_length", "length <="),
)


def describe(flow: Flow[Any], source: str) -> list[str]:
    """A flow's declarations as lines: summary, roles, params (a param without a usable
    default is shown as required, and the roles are those of the defaults)."""
    params, required = _defaults(flow)
    lines = [
        f"{flow.name} {flow.version}: {flow.summary}",
        f"source: {source}",
        "resumes: "
        + (
            "yes (the same command picks the run up)"
            if flow.resumable
            else "no (every start is a new run)"
        ),
        *_roles(flow, params, required),
        *_skill_lines(flow, params),
        "params (-p" + (", required ones marked" if required else "") + "):",
    ]
    for key, field in flow.Params.model_fields.items():
        limits = [
            f"{sym} {getattr(m, attr)}"
            for m in field.metadata
            for attr, sym in _LIMITS
            if getattr(m, attr, None) is not None
        ]
        if key in required:
            shown = f"  {key} (required; {_type_words(field.annotation)}" + "".join(
                f"; {limit}" for limit in limits
            )
            shown += ")"
        else:
            shown = f"  {key} = {getattr(params, key)!r}" + (
                f" ({', '.join(limits)})" if limits else ""
            )
        lines.append(shown + (f": {field.description}" if field.description else ""))
    return lines


def _defaults(flow: Flow[Any]) -> tuple[FlowParams, set[str]]:
    """The flow's params with every default, and the names of those a run must be given
    (no default, or a default the params refuse: `-p evaluator=...`)."""
    from pydantic import ValidationError

    try:
        return flow.Params(), set()
    except ValidationError as exc:
        required = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
    # The defaults that exist, unchecked: enough for the roles of flows whose roles do not
    # depend on what is required.
    return flow.Params.model_construct(), required


NO_WORDS = "works outside the lanes (the flow describes it no further)"


def _roles(flow: Flow[Any], params: FlowParams, required: set[str]) -> list[str]:
    try:
        roles = flow.describe_roles(params)
    except Exception:  # roles that depend on a required param: nothing to show them from
        return [f"roles: depend on {', '.join(sorted(required))} (give them with -p)"]
    lines = ["roles (-a, in order):"]
    where = _lane_words(flow, params)
    for role in roles:
        lines.append(f"  {_role_line(role, where)}")
    shown = {r.name for r in roles}
    for key, more in _switched_roles(flow, params):
        lines += [
            f"  with -p {key}=true: {_role_line(r, where)}" for r in more if r.name not in shown
        ]
        shown |= {r.name for r in more}
    return lines


def _role_line(role: Role, where: dict[str, str]) -> str:
    """A role and what it is for: the flow's words, else where its lane has it take turns."""
    extra = f" (default effort {role.defaults.effort})" if role.defaults.effort else ""
    without = f" (without it: {role.without})" if role.without else ""
    return f"{role.name}{extra}: {role.description or where.get(role.name) or NO_WORDS}{without}"


def _lane_words(flow: Flow[Any], params: FlowParams) -> dict[str, str]:
    from flamechase.flow.api import lane_words

    try:
        return lane_words(flow.lanes(params))
    except Exception:  # lanes of a flow that needs a required param: the roles still show
        return {}


def _switched_roles(flow: Flow[Any], params: FlowParams) -> list[tuple[str, list[Role]]]:
    """Roles a flow only has with a switch on (a bool param that defaults to off, as
    `-p lead=true` adds a role): found by asking the flow, so any flow's show them."""
    out = []
    for key, field in flow.Params.model_fields.items():
        if field.annotation is not bool or getattr(params, key, None) is not False:
            continue
        try:
            on = flow.Params.model_validate({**params.model_dump(), key: True})  # checked
            out.append((key, flow.describe_roles(on)))
        except Exception:  # noqa: S110 - the switch alone is no valid set of params: none to show
            pass
    return out


def _skill_lines(flow: Flow[Any], params: FlowParams) -> list[str]:
    """The skill each role gets, and where it is mounted (agents/skills.py)."""
    from flamechase.agents.skills import MOUNTS

    try:
        by_skill: dict[str, list[str]] = {}
        for role in dict.fromkeys(flow.roles(params)):
            found = flow.skill(role)
            if found is not None:
                by_skill.setdefault(found.name, []).append(role)
    except Exception:  # roles that depend on a required param: _roles said so
        return []
    where = "; ".join(f"{cli}: {how}" for cli, how in MOUNTS.items())
    return [
        f"skill {name} (for {', '.join(roles)}): mounted on {where}; other agents (exec:, "
        "acp:) get it in the prompt"
        for name, roles in by_skill.items()
    ]


def _type_words(annotation: Any) -> str:
    """A param's type as a user writes it after -p: `str`, `int`, `list[str]`."""
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _show_entries(entries: list[Entry], source: str) -> None:
    newest = entries[-1]
    echo(f"{newest.name} {newest.version}: {newest.description}")
    echo(f"index: {source}")
    echo(f"repository: {newest.url}  license: {newest.license or '?'}")
    for e in reversed(entries):
        echo(
            f"  {e.version}: {e.ref or '-'} commit {e.commit}"
            + (f" #{e.subdir}" if e.subdir else "")
        )
    echo(f"not installed: flamechase flows install {newest.name}[@VERSION]")


@group.command("install")
@click.argument("spec", metavar="NAME[@VERSION]")
@click.option("--index", "index_source", metavar="INDEX", help=INDEX_HELP)
@click.option("--refresh", is_flag=True, help="trust a git index whose tag moved")
def install_command(spec: str, index_source: str | None, refresh: bool) -> int:
    """Install a flow from an index at the commit the index records (verified: its tag must
    still name that commit); with no index, from `official`, the releases of the built-in
    flows this flamechase ships (offline, with their variants). Installing imports the flow:
    it runs its code."""
    for line in install_lines(spec, index_source, refresh):
        echo(line)
    return 0


def install_lines(spec: str, index_source: str | None, refresh: bool = False) -> list[str]:
    """Install `spec` from the index named or given (none: official); what to tell the user."""
    from flamechase.flows import BUILTIN
    from flamechase.loader import index, indexes, official

    if indexes.source_of(index_source or index.default_source()) == official.NAME:
        done = official.install(spec)
        return [
            f"installed {done.name} {done.version} from the official index (the code "
            f"this flamechase ships, {done.code_hash[:12]})"
            + "".join(f", with {v}" for v in done.variants)
            + f"; run it with -f {done.name}"
        ]
    source, entries = _index_entries(index_source, refresh)
    assert source is not None  # only the official index gives none
    record = index.install(index.pick(entries, spec, source), source)
    where = f"{record.url}@{record.commit}" + (f"#{record.subdir}" if record.subdir else "")
    lines = [f"installed {record.name} {record.version} from {where}; run it with -f {record.name}"]
    if record.name in BUILTIN:
        lines.append(
            f"-f {record.name} now runs the installed flow, not the built-in one; "
            f"`flamechase flows uninstall {record.name}` goes back to the built-in"
        )
    return lines


@group.command("uninstall")
@click.argument("name")
def uninstall_command(name: str) -> int:
    """Forget an installed flow (its cached checkout stays for runs that used it)."""
    from flamechase.loader import installed

    if not installed.remove(name):
        raise FlowIndexError(f"no installed flow called {name!r}; see flamechase flows list")
    echo(f"uninstalled {name}")
    return 0


def _add_index_commands() -> None:
    from flamechase.cli.flow_index import index_group

    group.add_command(index_group)


_add_index_commands()
