"""An `exec:` actor for parallel_flame_chase_mission's CLI tests (every role).

The coordinator plans two missions and decides each audit from its packet: accept what is
deliverable_ready (a lane 2 package with an integration directive), continue the rest. With
the flag file `hang-audit` beside this script, its first decision session sleeps (the test
kills the engine then). With `edit-protected`, lane 2 also rewrites `bench.py` in its tree.
Lane 2 delivers a package on its first turn; lane 1 progresses until
it is given an integration mission, delivers it, then delivers its own mission.
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
        out = {"status": "progress", "summary": "a step"}
    Path(E["FLAMECHASE_REPORT"]).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
    sys.exit(0)
