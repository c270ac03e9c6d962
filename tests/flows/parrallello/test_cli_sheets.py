"""Contact sheets end to end: the images scripted builders leave reach the critic's copy as at
most 3 sheets of at most 1600 px, decoded by the runtime; links, non-images and the rest are
refused and counted in the log; none of it is taken into the front's tree or the source."""

from __future__ import annotations

import json
from pathlib import Path

from tests.flows.parrallello.scripted import git, repo
from tests.flows.parrallello.test_cli import run
from tests.helpers import events


def test_a_critic_gets_at_most_three_sheets_of_at_most_1600_px(
    tmp_path: Path, state_home: Path
) -> None:
    ws = repo(tmp_path, {"P": {}}, blocks=1, rounds_per_block=1)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG not really")
    images = {"a-wide.png": "4000x1000", "b-fake.png": "text", "c-link.png": f"link:{secret}"}
    images |= {f"d{i}.png": "64x64" for i in range(4)}
    proc = run(tmp_path, ws, {"P": {"images": images}})
    assert proc.returncode == 0, proc.stderr
    (seen_file,) = state_home.glob("runs/*/lanes/P/sheets-1.json")
    seen = json.loads(seen_file.read_text())
    d = ".parrallello/sheets"
    assert seen == {
        "seen": {
            f"{d}/sheet-1.png": ["PNG", 1600, 400],
            f"{d}/sheet-2.png": ["PNG", 64, 64],
            f"{d}/sheet-3.png": ["PNG", 64, 64],
        },
        "listed": ["sheet-1.png", "sheet-2.png", "sheet-3.png"],
    }
    (said,) = [e for e in events(ws) if e["kind"] == "sheets_taken"]
    p = said["payload"]
    assert (len(p["taken"]), p["resized"], p["refused_count"]) == (3, 1, 4)
    why = "\n".join(p["refused"])
    assert "b-fake.png: not an image" in why and "c-link.png: a symbolic link" in why
    assert "d2.png: over 3 sheets" in why and "d3.png: over 3 sheets" in why
    assert "3 contact sheets taken to the critic" in proc.stdout + proc.stderr
    # The images were never the builder's work to take: the front landed without them.
    landed = git(ws, "log", "--format=%s").splitlines()[0]
    assert landed == "parrallello: front P approved (round 1)"
    assert not (ws / ".parrallello").exists()
