"""A command may read other private places it names (`reads`): they stay visible to it,
read-only, while every other private place stays hidden. Checked on the jail the engine builds,
and with a real process under bubblewrap."""

from __future__ import annotations

import subprocess
from pathlib import Path

from flamechase.engine.confinement import turn_jail
from flamechase.engine.layout import RunLayout
from flamechase.jail import JailSpec, Mode, ready, wrap
from tests.jail.conftest import needs_bwrap

LANES = ("lane-1", "lane-2")


def _jail(root: Path, reads: tuple[str, ...], mode: Mode = "bwrap") -> tuple[JailSpec, RunLayout]:
    layout = RunLayout(root / "home" / "runs" / "r-1")
    places = {name: layout.place(name) for name in ("central", "lanes/lane-1", "lanes/lane-2")}
    for name, path in places.items():
        path.mkdir(parents=True)
        (path / "f.txt").write_text(f"{name}\n")
    (layout.lane_dir("lane-1") / "tmp").mkdir()
    source = root / "src"
    source.mkdir()
    spec = turn_jail(
        mode,
        layout,
        lane="lane-1",
        place="lanes/lane-1",
        place_path=places["lanes/lane-1"],
        turn_dir=None,
        cli=None,
        role="r",
        source=source,
        state_home=root / "home",
        lanes=LANES,
        places=places,
        reads=reads,
    )
    return spec, layout


def test_a_place_a_command_reads_is_not_hidden_and_the_others_are(tmp_path: Path) -> None:
    spec, layout = _jail(tmp_path, reads=("central",))
    hidden = set(spec.hidden)
    assert layout.place("central") not in hidden
    assert layout.place("lanes/lane-2") in hidden
    assert layout.place("lanes/lane-1") not in hidden  # its own place


@needs_bwrap
def test_under_bubblewrap_a_read_place_is_readable_but_not_writable(tmp_path: Path) -> None:
    spec, layout = _jail(tmp_path, reads=("central",))
    ready(spec)
    central, other = layout.place("central"), layout.place("lanes/lane-2")
    script = (
        f"cat {central}/f.txt; cat {other}/f.txt 2>/dev/null || echo hidden; "
        f"echo x > {central}/g.txt 2>/dev/null || echo refused"
    )
    out = subprocess.run(
        wrap(["/bin/sh", "-c", script], spec),
        capture_output=True,
        text=True,
        cwd=layout.place("lanes/lane-1"),
    )
    assert out.stdout.split() == ["central", "hidden", "refused"], out.stderr
