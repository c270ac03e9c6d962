"""Long start-of-run notices fold to one line: the jail's and the self-reported spend's.

Before, the jail notice (~620 characters) and the spend notice were said whole at every start
and in every `status`. Now the log and `status` show one short line each and say where the
rest is; `status --verbose` shows them in full.
"""

from __future__ import annotations

from pathlib import Path

from flamechase.jail.coverage import NAMES, summary
from tests.helpers import cli

LONG = 240  # longer than any folded line, shorter than either notice in full


def test_long_notices_are_one_short_line_and_status_verbose_has_them_whole(
    source_tree: Path,
) -> None:
    roles = "first_chaser=sim/steady,second_chaser=sim/steady"
    proc = cli(
        "exec", "-f", "flame_chase", "-a", roles, "-p", "budget.turns=1", "t", cwd=source_tree
    )
    assert proc.returncode == 0, proc.stderr
    notices = [line for line in proc.stdout.splitlines() if " Notice: " in line]
    assert len(notices) == 2, proc.stdout
    assert all(len(line) < LONG and "status --verbose" in line for line in notices), notices
    assert "spend of 2 roles is self-reported by their agents" in notices[0]

    plain = cli("status", cwd=source_tree, check=True).stdout.splitlines()
    notes = [line for line in plain if line.startswith("note: ")]
    assert len(notes) == 2 and all(len(line) < LONG for line in notes), notes
    assert "  (`flamechase status --verbose` shows the notices in full)" in plain

    verbose = cli("status", "--verbose", cwd=source_tree, check=True).stdout.splitlines()
    full = [line.removeprefix("note: ") for line in verbose if line.startswith("note: ")]
    assert full[0].startswith("spend of first_chaser, second_chaser is self-reported")
    mode = next(m for m in ("bwrap", "landlock") if NAMES[m] in full[1])
    assert full[1].startswith("every agent and measurement: ") and len(full[1]) > LONG
    if mode == "bwrap":
        assert full[1].endswith(summary("bwrap"))
    assert "status --verbose" not in "\n".join(verbose)


def test_the_jail_line_says_once_whether_lanes_port_blocks_are_enforced_or_only_advised() -> None:
    from flamechase.engine.notices import Folded, jail_notice
    from flamechase.jail import Probe, choose

    for mode in ("bwrap", "landlock"):
        kept, advised = (
            jail_notice(choose(mode, Probe(bwrap_reason=None, landlock_abi=abi))) for abi in (4, 3)
        )
        assert isinstance(kept, Folded) and isinstance(advised, Folded)
        assert kept.line.endswith("; lanes' port blocks enforced)")
        assert advised.line.endswith("; lanes' port blocks only advised)")
        assert "blocks are advised, not enforced" in advised.detail
        shown = f"19:37:37 Notice: {advised.line}; `flamechase status --verbose` for the rest"
        assert len(shown) < LONG
