"""`agents`: which supported agent CLIs are on PATH, their versions and effort ladders."""

from __future__ import annotations

import json

import click

from flamechase.text import echo, echo_json


@click.command("agents")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='a JSON list of {"cli", "path", "version", "tested", "tested_range", "efforts"}',
)
def command(as_json: bool) -> int:
    """List the supported agent CLIs: installed or not, version, effort ladder."""
    from flamechase.agents.inventory import list_agents

    agents = list_agents()
    if as_json:
        echo_json(json.dumps(agents, indent=1))
        return 0
    rows = [
        (
            a["cli"],
            a["path"] or "not installed",
            _version(a),
            ", ".join(a["efforts"]) or "(no effort setting)",
        )
        for a in agents
    ]
    header = ("CLI", "PATH", "VERSION", "EFFORTS")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    for row in [header, *rows]:
        echo("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])
    echo(
        "acp:COMMAND [-m MODEL] runs any Agent Client Protocol agent (no effort setting); "
        "its spend is seen only as tokens it reports, priced when MODEL has a price, "
        "so without one budget.cost is refused."
    )
    return 0


def _version(agent: dict[str, object]) -> str:
    version = str(agent["version"] or "-")
    if agent["tested"] is False:
        return f"{version} (untested: tested {agent['tested_range']})"
    return version
