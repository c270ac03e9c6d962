"""Scripted builders and critics, real gate scripts and real git repositories for running
parrallello end to end through the real `flamechase` command.

A repository has per front `src/<F>/core.py` (`VALUE = 1`) and a gate `gates/<F>.py` that
passes when VALUE reaches the front's target; `mode` makes a gate misbehave in one of the ways
the runtime must fail closed on. The builder (`exec:`) raises VALUE by one in its own file and
can be told (a JSON config in $PLL_CONFIG, keyed by front) to leave images for the critic
(`images`: name -> "WxH", "text" or "link:PATH"), to also write outside its files,
edit its gate, append to files (`write`: path -> text), wait for other builders (to prove
they run at once) or for a marker another left in its lane's directory (`LANE/NAME`), hang
once, hold the run's measurement lock (`hog`: for up to that many seconds, leaving a
`holding` marker) or leave a background job (`job`: its argv) running. The critic
records the contact sheets it finds (`lanes/<F>/sheets-<round>.json`), returns findings of a
given severity, says whatever `approve` it is told, and can change
the gate in its copy (`critic_gate`: text substitutions in a round, and the `gate_changes` it
declares for them), as a cheating or a recalibrating critic would, and report the account's
usage shares in a round (`account`: round -> shares), as a CLI does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

GATE = """\
import json, re, sys, time
mode = {mode!r}
value = int(re.search(r"VALUE = (\\d+)", open("src/{front}/core.py").read()).group(1))
items = [{{"id": "T.{front}.value", "value": value, "target": ">={target}",
          "pass": value >= {target}}},
         {{"id": "T.{front}.exists", "value": True, "target": True, "pass": True}}]
if mode == "drop" and value >= 2:
    items = items[:1]
if mode == "lie":  # every item says it passes, whatever its value
    for i in items:
        i["pass"] = True
ok = all(i["pass"] for i in items)
n = sum(i["pass"] for i in items)
line = "RESULT_JSON " + json.dumps({{"pass": ok, "items": items}})
summary = f"SUMMARY {{n}}/{{len(items)}} PASS"
code = 0 if ok else 1
if mode == "no-result":
    line = "all fine"
elif mode == "bad-json":
    line = "RESULT_JSON {{pass: yes"
elif mode == "empty":
    line, summary = 'RESULT_JSON {{"pass": true, "items": []}}', "SUMMARY 0/0 PASS"
elif mode == "no-summary":
    summary = ""
elif mode == "summary-mismatch":
    summary = f"SUMMARY {{len(items)}}/{{len(items)}} PASS"
elif mode == "exit-mismatch":
    code = 1 - code
elif mode == "crash":
    raise SystemExit(7)
elif mode == "timeout":
    time.sleep(60)
elif mode == "locked" and not __import__("os").environ.get("FLAMECHASE_LOCK_HELD"):
    raise SystemExit("a performance gate must measure under the lock")
print("measuring...", file=sys.stderr)
print(line)
print(summary)
sys.exit(code)
"""

BUILDER = """\
#!{python}
import json, os, re, sys, time
brief = json.loads(os.environ["FLAMECHASE_BRIEF"])
front = brief["front"]
conf = json.load(open(os.environ["PLL_CONFIG"])).get(front, {{}})
conf = {{**conf, **conf.get("as", {{}}).get(brief["owner"], {{}})}}  # per owner, after a split
lane_dir = os.path.join(os.environ["FLAMECHASE_RUN_DIR"], "lanes", os.environ["FLAMECHASE_LANE"])
open(os.path.join(lane_dir, f"started-{{brief['round']}}"), "w").close()
if conf.get("hang_round") == brief["round"] and os.environ.get("FLAMECHASE_ATTEMPT") == "1":
    time.sleep(600)
for other in conf.get("wait_for", []):
    if "/" not in other:
        other += "/started-1"
    marker = os.path.join(os.environ["FLAMECHASE_RUN_DIR"], "lanes", other)
    deadline = time.monotonic() + 120
    while not os.path.exists(marker):
        if time.monotonic() > deadline:
            sys.exit("builder " + other + " never ran at the same time")
        time.sleep(0.05)
path = f"src/{{front}}/core.py"
text = open(path).read()
value = int(re.search(r"VALUE = (\\d+)", text).group(1))
if not conf.get("skip_value"):
    open(path, "w").write(text.replace(f"VALUE = {{value}}", f"VALUE = {{value + 1}}"))
if conf.get("outside"):
    open("README.md", "a").write("a builder was here\\n")
if conf.get("gate_edit"):
    open(f"gates/{{front}}.py", "a").write("\\n# target moved\\n")
for rel, extra in conf.get("write", {{}}).items():  # appended to (or new) files of its own
    os.makedirs(os.path.dirname(rel) or ".", exist_ok=True)
    open(rel, "a").write(extra)
sheets = ".parrallello/sheets"  # images for the critic: name -> "WxH", "text" or "link:PATH"
for name, kind in conf.get("images", {{}}).items():
    os.makedirs(sheets, exist_ok=True)
    if kind == "text":
        open(os.path.join(sheets, name), "w").write("not an image\\n")
    elif kind.startswith("link:"):
        os.symlink(kind[5:], os.path.join(sheets, name))
    else:
        from PIL import Image
        w, h = map(int, kind.split("x"))
        Image.new("RGB", (w, h), (255, 0, 0)).save(os.path.join(sheets, name), "PNG")
escapes = []
for target in conf.get("escape", []):
    target = target.replace("RUN_DIR", os.environ["FLAMECHASE_RUN_DIR"])
    try:
        open(target, "w").write("escaped")
        escapes.append("WROTE " + target)
    except OSError as exc:
        escapes.append(f"refused {{exc.__class__.__name__}}")
if conf.get("hog"):  # sit on the measurement lock for up to `hog` seconds, as a hostile
    import shlex, subprocess  # builder would, until the runtime takes it away
    lock = shlex.split(brief["machine"]["lock"])
    got = subprocess.run([*lock, "acquire", "--who", "hog", "--max", str(conf["hog"]),
                          "--wait", "30"], capture_output=True, text=True)
    open(os.path.join(lane_dir, "holding"), "w").close()
    deadline = time.monotonic() + conf["hog"]
    while time.monotonic() < deadline:
        st = subprocess.run([*lock, "status", "--json"], capture_output=True, text=True)
        if not any(h.get("who") == "hog" for h in json.loads(st.stdout)["holders"]):
            break
        time.sleep(0.1)
    rel = subprocess.run([*lock, "release"], capture_output=True, text=True)
    escapes.append(f"HOG {{got.returncode}} RELEASE {{rel.returncode}} {{rel.stderr.strip()}}")
if conf.get("job"):  # a background job the builder leaves running when it finishes
    import shlex, subprocess
    started = subprocess.run([*shlex.split(brief["machine"]["job"]), "start", "--name",
                              "orphan", "--", *conf["job"]], capture_output=True, text=True)
    escapes.append(f"JOB {{started.returncode}} {{started.stdout.strip()}} {{started.stderr}}")
json.dump({{"tickets": [{{"id": t["id"], "status": "claimed_fixed", "evidence": "raised VALUE"}}
                        for t in brief["tickets"]],
           "handoff": f"VALUE {{value}} -> {{value + 1}}\\n" + "\\n".join(escapes)
                      + "".join(f"\\nMETHOD {{t['id']}}" for t in brief["tickets"]
                                if t["detail"].startswith("CHANGE METHOD"))
                      + ("\\nLEAD: " + brief["lead_note"] if brief.get("lead_note") else "")}},
          open(os.environ["FLAMECHASE_REPORT"], "w"))
"""

CRITIC = """\
#!{python}
import json, os
brief = json.loads(os.environ["FLAMECHASE_BRIEF"])
conf = json.load(open(os.environ["PLL_CONFIG"])).get(brief["front"], {{}})
run = brief["gate"]["full_run"]
seen = {{}}  # what the critic finds of the contact sheets its brief names, in its own copy
for sheet in brief["contact_sheets"]["files"]:
    from PIL import Image
    with Image.open(sheet["name"]) as img:
        seen[sheet["name"]] = [img.format, *img.size]
lane_dir = os.path.join(os.environ["FLAMECHASE_RUN_DIR"], "lanes", os.environ["FLAMECHASE_LANE"])
json.dump({{"seen": seen, "listed": sorted(os.listdir(".parrallello/sheets"))
            if os.path.isdir(".parrallello/sheets") else None}},
          open(os.path.join(lane_dir, f"sheets-{{brief['round']}}.json"), "w"))
findings, tickets = [], []
severity = conf.get("severity")
if severity:
    findings.append({{"id": "c1", "severity": severity, "title": "the critic objects",
                      "evidence": "scripted", "owner": "core"}})
    tickets.append({{"id": "C-1", "severity": severity, "title": "answer the objection",
                     "owner": "core"}})
for i in range(conf.get("many", 0)):  # that many major tickets for core, every round
    findings.append({{"id": f"m{{i}}", "severity": "major", "title": f"item {{i}}",
                      "evidence": "scripted", "owner": "core"}})
    tickets.append({{"id": f"M-{{i}}", "severity": "major", "title": f"item {{i}}",
                     "owner": "core"}})
approve = conf.get("approve", "auto")
if approve == "auto":
    approve = bool(run and run["passed"]) and not findings
changes = []
edit = conf.get("critic_gate")  # {{"round": N, "sub": [[old, new], ...], "changes": [...]}}
if edit and edit.get("round", 1) == brief["round"]:
    path = "gates/" + brief["front"] + ".py"
    text = open(path).read()
    for old, new in edit.get("sub", []):
        text = text.replace(old, new)
    open(path, "w").write(text)
    changes = edit["changes"]
account = conf.get("account", {{}}).get(str(brief["round"]))  # the account's usage, as a CLI
if account:  # reports it: an exec agent in its usage file
    json.dump({{"account": account}}, open(os.environ["FLAMECHASE_USAGE"], "w"))
json.dump({{"findings": findings, "tickets": tickets, "approve": approve,
           "gate_changes": changes,
           "summary": "scripted review" + (" LEAD: " + brief["lead_note"]
                                           if brief.get("lead_note") else "")}},
          open(os.environ["FLAMECHASE_REPORT"], "w"))
"""


LEAD = """\
#!{python}
import json, os
brief = json.loads(os.environ["FLAMECHASE_BRIEF"])
conf = json.load(open(os.environ["PLL_CONFIG"])).get(brief["front"], {{}})
decision = conf.get("lead") or {{"lead_note": "carry on"}}
json.dump(decision, open(os.environ["FLAMECHASE_REPORT"], "w"))
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def repo(tmp: Path, fronts: dict[str, dict[str, Any]], **plan_top: Any) -> Path:
    """A git repository with a front per entry ({mode, target, wave, depends_on, plan...})
    and its PLAN.yaml."""
    ws = tmp / "ws"
    (ws / "gates").mkdir(parents=True)
    (ws / "README.md").write_text("the project\n")
    plan_fronts = []
    for fid, spec in fronts.items():
        (ws / "src" / fid).mkdir(parents=True)
        (ws / "src" / fid / "core.py").write_text("VALUE = 1\n")
        (ws / "gates" / f"{fid}.py").write_text(
            GATE.format(mode=spec.get("mode", "ok"), front=fid, target=spec.get("target", 2))
        )
        plan_fronts.append(
            {
                "id": fid,
                "goal": f"VALUE of {fid} reaches its target",
                "gate": f"python3 gates/{fid}.py",
                "owners": {"core": [f"src/{fid}/**"]},
                "targets": {f"T.{fid}.value": f">={spec.get('target', 2)}"},
                **spec.get("plan", {}),
            }
        )
    (ws / "PLAN.yaml").write_text(yaml.safe_dump({"fronts": plan_fronts, **plan_top}))
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "-c", "user.email=u@example.invalid", "-c", "user.name=u", "commit", "-qm", "start")
    return ws


def actors(
    tmp: Path, config: dict[str, Any], *, lead: bool = False
) -> tuple[list[str], dict[str, str]]:
    """(`-a` args, env) for the scripted builder and critic (and `lead`: the lead, whose
    decision is the front's `lead` in `config`) with `config` by front."""
    paths = {}
    roles = (("builder", BUILDER), ("critic", CRITIC), *((("lead", LEAD),) if lead else ()))
    for name, body in roles:
        path = tmp / f"{name}.py"
        path.write_text(textwrap.dedent(body.format(python=sys.executable)))
        path.chmod(0o755)
        paths[name] = path
    conf = tmp / "pll-config.json"
    conf.write_text(json.dumps(config))
    agents = ",".join(f"{name}=exec:{path}" for name, path in paths.items())
    return (
        ["-a", agents],
        {"PLL_CONFIG": str(conf)},
    )
