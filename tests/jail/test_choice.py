"""`-p sandbox=…` picks the jail, or refuses in one line; what each jail stops is said once,
the same at the start of a run and in the README."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flamechase.errors import SandboxUnavailable
from flamechase.jail import MODES, Probe, choose, summary
from flamechase.jail.coverage import LEAVES, STOPS

README = Path(__file__).resolve().parents[2] / "README.md"
NO_BWRAP = "bubblewrap cannot create a jail here (setting up uid map: Permission denied)"
EVERYTHING = Probe(bwrap_reason=None, landlock_abi=6)
LANDLOCK_ONLY = Probe(bwrap_reason=NO_BWRAP, landlock_abi=6)
OLD_LANDLOCK = Probe(bwrap_reason=NO_BWRAP, landlock_abi=3)
NOTHING = Probe(bwrap_reason="bubblewrap is not installed", landlock_abi=0)


@pytest.mark.parametrize(
    ("requested", "probe", "mode"),
    [
        ("auto", EVERYTHING, "bwrap"),
        ("auto", LANDLOCK_ONLY, "landlock"),
        ("bwrap", EVERYTHING, "bwrap"),
        ("landlock", EVERYTHING, "landlock"),
        ("off", EVERYTHING, "off"),
        ("off", NOTHING, "off"),
    ],
)
def test_sandbox_param_picks_the_jail(requested: str, probe: Probe, mode: str) -> None:
    choice = choose(requested, probe)
    assert choice.mode == mode
    assert choice.notices and choice.notices[-1] == summary(
        choice.mode, scoped=probe.landlock_scopes
    )


def test_auto_says_out_loud_why_it_fell_back_to_landlock() -> None:
    notices = choose("auto", LANDLOCK_ONLY).notices
    assert notices[0] == f"{NO_BWRAP}: falling back to Landlock"


@pytest.mark.parametrize(
    ("requested", "probe", "needle"),
    [
        (
            "auto",
            NOTHING,
            "no jail can run here: bubblewrap is not installed, and this kernel has no Landlock",
        ),
        ("bwrap", LANDLOCK_ONLY, f"sandbox=bwrap: {NO_BWRAP}"),
        ("landlock", NOTHING, "sandbox=landlock: this kernel has no Landlock"),
    ],
)
def test_a_jail_that_cannot_run_is_refused_never_silently_skipped(
    requested: str, probe: Probe, needle: str
) -> None:
    with pytest.raises(SandboxUnavailable) as caught:
        choose(requested, probe)
    message = str(caught.value)
    assert needle in message and "sandbox=off" in message and "\n" not in message
    assert caught.value.exit_code == 2


def test_landlock_below_abi_6_says_it_does_not_stop_signals() -> None:
    scoped = summary("landlock", scoped=True)
    unscoped = summary("landlock", scoped=False, ports=False)
    assert "stops writing" in scoped and "signalling the engine" in scoped.split("Does not")[0]
    assert "signalling the engine" not in unscoped.split("Does not")[0]
    assert "below 6" in unscoped and "below 6" not in scoped
    assert choose("landlock", OLD_LANDLOCK).notices[-1] == unscoped


@pytest.mark.parametrize("mode", ["bwrap", "landlock"])
def test_below_landlock_abi_4_port_blocks_are_said_to_be_advised_not_enforced(mode: str) -> None:
    """Once, in the jail's notice at the start of the run: no line of its own."""
    old = Probe(bwrap_reason=None if mode == "bwrap" else NO_BWRAP, landlock_abi=3)
    new = Probe(bwrap_reason=old.bwrap_reason, landlock_abi=4)
    said, kept = choose(mode, old).notices, choose(mode, new).notices
    assert len(said) == len(kept)
    stops, leaves = said[-1].split(". Does not stop ")
    assert "outside its block" not in stops
    assert "blocks are advised, not enforced, and a listener outside one is named" in leaves
    stops, leaves = kept[-1].split(". Does not stop ")
    assert "a lane's turn binding a TCP port outside its block (port 0" in stops
    assert "advised" not in leaves and "binding UDP ports" in leaves


def _readme_rows() -> dict[str, str]:
    text = README.read_text()
    section = text[text.index("## Containment") :]
    section = section[: section.index("\n## ", 1)]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `(\w+)`", line)
        if m:
            rows[m.group(1)] = line
    return rows


def test_the_readme_containment_table_says_what_the_code_says() -> None:
    rows = _readme_rows()
    assert set(rows) == set(MODES)
    for mode in MODES:
        stops, leaves = rows[mode].split(" | ")[1:3]
        for item in STOPS[mode]:
            assert item in stops, (mode, item)
        for item in LEAVES[mode]:
            assert item in leaves, (mode, item)
