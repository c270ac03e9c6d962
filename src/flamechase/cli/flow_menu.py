"""`/flow` at the prompt: the flows here, then Flowverses (indexes by name: official first)
→ a flowverse's flows → install one. Ctrl-C (or Ctrl-D, or Enter on an empty choice) at any
question goes back to the prompt with nothing installed.
"""

from __future__ import annotations

from flamechase.cli.asking import Ask, Cancelled, Say, answer
from flamechase.errors import FlamechaseError


def walk(ask: Ask, say: Say, here: list[str]) -> None:
    """One walk from the flows here to an install (or back)."""
    from flamechase.loader import indexes

    say(f"flows here: {', '.join(here)} (start one with $FLOW TASK)")
    named = list(indexes.named().items())
    say("Flowverses: " + "  ".join(f"{n}) {name}" for n, (name, _) in enumerate(named, 1)))
    name, source = _choose(ask, say, "flowverse", named, default=1)
    try:
        offered = _offered(source)
    except FlamechaseError as exc:
        say(f"{name}: {exc}")
        return
    say(f"{name}:")
    for n, (flow, line) in enumerate(offered, 1):
        say(f"  {n}) {flow}  {line}")
    flow, _line = _choose(ask, say, "flow to install", offered, default=None)
    keep = answer(ask, f"install {flow} from {name}? [Y/n]: ").strip().lower()
    if keep not in ("", "y", "yes"):
        say("nothing installed")
        return
    from flamechase.cli.flows import install_lines

    try:
        for line in install_lines(flow, name):
            say(line)
    except FlamechaseError as exc:
        say(f"flamechase: error: {exc}")


def _offered(source: str) -> list[tuple[str, str]]:
    """(name, what to show) for each flow the index offers, newest version of each."""
    from flamechase.loader import index, installed, official

    if source == official.NAME:
        return [
            (
                r.name,
                f"{r.version}"
                + "".join(f" (with {v.name})" for v in r.variants)
                + (f"  {r.description}" if r.description else ""),
            )
            for r in official.releases()
        ]
    newest: dict[str, index.Entry] = {}
    for entry in index.read(source):  # sorted by version: the last of a name is the newest
        newest[entry.name] = entry
    return [
        (
            e.name,
            f"{e.version}"
            + (" (installed)" if installed.get(e.name) else "")
            + (f"  {e.description}" if e.description else ""),
        )
        for e in newest.values()
    ]


def _choose(
    ask: Ask, say: Say, what: str, items: list[tuple[str, str]], default: int | None
) -> tuple[str, str]:
    """The item picked by number (or by name); Cancelled on Ctrl-C or an empty answer with
    no default."""
    while True:
        shown = f" [{default}]" if default else " (Enter: back)"
        text = answer(ask, f"{what}{shown}: ").strip()
        if not text and default:
            return items[default - 1]
        if not text:
            raise Cancelled
        if text.isdigit() and 1 <= int(text) <= len(items):
            return items[int(text) - 1]
        for item in items:
            if item[0] == text:
                return item
        say(f"{text!r} is not one of them: give its number (1-{len(items)}) or its name")
