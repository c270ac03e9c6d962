"""An `exec:` actor for parallel_flame_chase_mission's CLI tests (every role).

The coordinator plans two missions and decides each audit from its packet: accept what is
deliverable_ready (a lane 2 package with an integration directive), continue the rest. With
the flag file `hang-audit` beside this script, its first decision session sleeps (the test
kills the engine then). With `edit-protected`, lane 2 also rewrites `bench.py` in its tree.
Lane 2 delivers a package on its first turn; lane 1 progresses until
it is given an integration mission, delivers it, then delivers its own mission.
With `redirect`, lane 1 adds `added_by_lane1.txt` to your tree on its turns; lane 2's first
mission edits `stray` in its copy and reports `blocked`; the coordinator redirects it to
mission "retry" once its snapshot of your tree has lane 1's file (continues it before), and the
retry's first turn says in its summary which of the two files its tree has, then delivers.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
E = os.environ


def mission(title: str) -> dict[str, object]:
    return {"title": title, "objective": f"do {title}", "success_criteria": ["shown"]}


def ready(name: str) -> dict[str, object]:
    root = Path(E["FLAMECHASE_ARTIFACTS"])
    path = f"t{E['FLAMECHASE_TURN']}-{E['FLAMECHASE_ATTEMPT']}/{name}"
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(f"{name}\n")
    return {
        "status": "deliverable_ready",
        "summary": f"{name} is ready",
        "evidence": ["checked it"],
        "deliverable": {
            "title": name,
            "artifacts": [{"path": path, "description": name}],
            "integration_notes": "copy it",
        },
    }


def decide(prompt: str) -> dict[str, object]:
    start, end = prompt.index("Packet:\n") + 8, prompt.index("\n\nWrite the decision")
    packet = json.loads(prompt[start:end])
    audit = packet["audit"]
    if (HERE / "hang-audit").exists() and E["FLAMECHASE_ATTEMPT"] == "1":
        Path("audit-started").write_text("")
        time.sleep(120)
    lanes = []
    for m in packet["missions"]:
        v: dict[str, object] = {"lane": m["lane"], "verdict": "continue", "reason": "on track"}
        # Its snapshot is of your tree now: redirect once lane 1's file is in it (before,
        # continue: the lane blocks again and is audited again).
        if (m.get("outcome") or {}).get("status") == "blocked" and Path(
            "added_by_lane1.txt"
        ).exists():
            nxt = {**mission("retry"), "change_scale": "probe"}
            v = {**v, "verdict": "redirect", "changes": ["scale"], "next_mission": nxt}
        if (m.get("outcome") or {}).get("status") == "deliverable_ready":
            v = {"lane": m["lane"], "verdict": "accept", "reason": "shown"}
            if m["lane"] != "lane-1":
                v["integration"] = {"objective": "take it", "success_criteria": ["green"]}
        lanes.append(v)
    return {"audit_id": audit["audit_id"], "revision": audit["revision"], "lanes": lanes}


def main() -> None:
    prompt = Path(E["FLAMECHASE_PROMPT"]).read_text()
    lane = E.get("FLAMECHASE_LANE", "")
    if not lane:
        if int(E["FLAMECHASE_TURN"]) < 1000:
            out: dict[str, object] = {
                "lanes": [{"lane": f"lane-{n}", "mission": mission(f"m{n}")} for n in (1, 2)]
            }
        else:
            out = decide(prompt)
    elif lane == "lane-2" and (HERE / "redirect").exists() and "retry" not in prompt:
        Path("stray").write_text("an edit of the first mission\n")
        time.sleep(0.5)
        out = {"status": "blocked", "summary": "stuck", "evidence": ["tried it"]}
    elif lane == "lane-2" and (HERE / "redirect").exists() and not Path(".said").exists():
        Path(".said").write_text("")
        has = [n for n in ("added_by_lane1.txt", "stray") if Path(n).exists()]
        out = {"status": "progress", "summary": f"tree has: {' '.join(has) or 'neither'}"}
    elif lane == "lane-2":
        if (HERE / "edit-protected").exists():
            Path("bench.py").write_text("print('score: 0')  # made easy\n")
        out = ready("patch.txt")
    elif "This is an integration mission" in prompt:
        Path(".integrated").write_text("")
        out = ready("merged.txt")
    elif Path(".integrated").exists():
        out = ready("own.txt")
    else:
        if (HERE / "redirect").exists():
            Path("added_by_lane1.txt").write_text("new\n")
        out = {"status": "progress", "summary": "a step"}
    Path(E["FLAMECHASE_REPORT"]).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
    sys.exit(0)
