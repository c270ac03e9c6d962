"""A gate's output judged, failing closed: the runtime decides PASS, never the gate's word alone.

A gate prints, on stdout (the last of each wins):

    RESULT_JSON {"pass": true, "items": [{"id": "T.x", "value": 3, "target": "<=5", "pass": true}]}
    SUMMARY 1/1 PASS

and exits 0 when `pass` is true, 1 when it is false. Anything else is FAIL with a reason:

    no-result-line   no RESULT_JSON line            bad-json        not JSON of that shape
    empty            no items                       duplicate-ids   an item id repeats
    no-summary-line  no SUMMARY n/m PASS line       inconsistent    the lines disagree with
                                                                    each other, the exit code
                                                                    or --only
    dropped-items    fewer items than the last run  timeout/crash   ran too long / exit > 1,
                     (less any recalibration that                   or could not start
                     removed items on purpose)

`SUMMARY n/m PASS` reads "n of m items pass" (PASS is a label, not the verdict); `FAIL` is
accepted as the label too, and then must not claim every item passes. The runtime keeps a
receipt's last 64 KiB of output: a gate prints its two lines last.

Once the lines agree with each other, the runtime computes each item's pass itself from its
value and target (`yardstick.meets`): an item whose `pass` says otherwise (either way) fails
and is named in `lied`. Against the front's contract (item id -> target: the plan's targets,
then every item an accepted run printed) the run also fails closed when:

    unbound          (at P0) a plan target has no item, or its item prints another target
    dropped-items    an item of the contract is missing (removed or renamed)
    target-moved     an item prints another target than the contract's, where nobody may
                     change it (a builders' round)
    loosened         a critic's changed gate prints a looser target than the contract's
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from flamechase.flows.parrallello.yardstick import changes, meets

__all__ = ["GateResult", "judge_gate", "target_text"]

FAILING_KEPT = 40  # failing items kept in the state (the receipt keeps the whole output tail)
_SUMMARY = re.compile(r"^\s*SUMMARY\s+(\d+)\s*/\s*(\d+)\s+(PASS|FAIL)\s*$")


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    reason: str | None = None  # why it failed closed; None for a plain pass or fail
    detail: str = ""
    n: int = 0
    m: int = 0
    failing: tuple[dict[str, Any], ...] = ()
    exit_code: int | None = None
    duration: float = 0.0
    targets: dict[str, str] = {}  # every item's printed target (the contract it would make)
    lied: tuple[str, ...] = ()  # items whose own `pass` disagrees with value and target
    tightened: tuple[str, ...] = ()  # items whose target is stricter than the contract's

    @property
    def summary(self) -> str:
        word = "PASS" if self.passed else f"FAIL ({self.reason})" if self.reason else "FAIL"
        return f"{self.n}/{self.m} {word}"


def _closed(reason: str, detail: str, receipt: Mapping[str, Any], **kw: Any) -> GateResult:
    return GateResult(
        passed=False,
        reason=reason,
        detail=detail[:300],
        exit_code=receipt.get("exit_code"),
        duration=float(receipt.get("duration") or 0.0),
        **kw,
    )


def _last(lines: list[str], prefix: str) -> str | None:
    for line in reversed(lines):
        if line.lstrip().startswith(prefix):
            return line.lstrip()[len(prefix) :]
    return None


def _items(raw: str) -> tuple[bool, list[dict[str, Any]]] | str:
    """(pass, items) from the RESULT_JSON text, or what is wrong with it."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return f"RESULT_JSON is not JSON ({exc.msg})"
    except ValueError:
        return "RESULT_JSON is not JSON"
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("pass"), bool)
        or not isinstance(data.get("items"), list)
    ):
        return 'RESULT_JSON must be {"pass": bool, "items": [...]}'
    for item in data["items"]:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("id"), str)
            or not isinstance(item.get("pass"), bool)
            or not {"value", "target"} <= item.keys()
        ):
            return 'every item needs "id" (text), "value", "target" and "pass" (bool)'
    return data["pass"], data["items"]


def target_text(target: object) -> str:
    """A target as the contract keeps it (`<=60`, `true`, `0`)."""
    return target if isinstance(target, str) else json.dumps(target)


# long: fail-closed judging: each way a gate's output can be wrong, in order
def judge_gate(
    receipt: Mapping[str, Any],
    *,
    previous: int | None = None,
    only: str | None = None,
    removed: int = 0,
    contract: Mapping[str, str] | None = None,
    tighten: bool = False,
    plan: bool = False,
) -> GateResult:
    """The verdict on one gate run from its `Run` receipt (exit code, output tail, error).

    `previous`: items of the last accepted run of this gate (None for the first);
    `removed`: items a logged recalibration took out since then; `contract`: the targets the
    items must print (`plan`: they are the plan's, at P0); `tighten`: a critic's changed gate,
    which may make targets stricter.
    """
    error = str(receipt.get("error") or "")
    code = receipt.get("exit_code")
    if "ran past" in error:
        return _closed("timeout", error, receipt)
    if code is None or code not in (0, 1):
        return _closed("crash", error or f"exited with code {code}", receipt)
    lines = str(receipt.get("output") or "").splitlines()
    raw = _last(lines, "RESULT_JSON ")
    if raw is None:
        return _closed("no-result-line", "no RESULT_JSON line in the output", receipt)
    parsed = _items(raw)
    if isinstance(parsed, str):
        return _closed("bad-json", parsed, receipt)
    top, items = parsed
    m, n = len(items), sum(1 for i in items if i["pass"])
    counts: dict[str, Any] = {
        "n": n,
        "m": m,
        "failing": tuple(i for i in items if not i["pass"])[:FAILING_KEPT],
    }
    if not items:
        return _closed("empty", "the gate reported no items", receipt, **counts)
    ids = [i["id"] for i in items]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        return _closed("duplicate-ids", f"item {dup} appears twice", receipt, **counts)
    summary = next((_SUMMARY.match(ln) for ln in reversed(lines) if _SUMMARY.match(ln)), None)
    if summary is None:
        return _closed("no-summary-line", "no SUMMARY n/m PASS line", receipt, **counts)
    sn, sm, word = int(summary.group(1)), int(summary.group(2)), summary.group(3)
    problem = None
    if (sn, sm) != (n, m):
        problem = f"SUMMARY says {sn}/{sm}, the items say {n}/{m}"
    elif top != (n == m):
        problem = f'"pass" is {str(top).lower()} but {n} of {m} items pass'
    elif word == "FAIL" and n == m:
        problem = "SUMMARY says FAIL though every item passes"
    elif code != (0 if top else 1):
        problem = f'exit code {code} with "pass": {str(top).lower()}'
    elif only and (stray := [i for i in ids if not fnmatch.fnmatchcase(i, only)]):
        problem = f"item {stray[0]} is outside --only {only}"
    if problem:
        return _closed("inconsistent", problem, receipt, **counts)
    # The gate's lines agree with each other; whether each item passes is the runtime's call.
    # An item whose flag disagrees either way fails (and is named): the gate is wrong about it.
    computed = {i["id"]: meets(i["value"], i["target"]) for i in items}
    lied = tuple(i["id"] for i in items if i["pass"] != computed[i["id"]])
    truth = {i["id"]: computed[i["id"]] and i["id"] not in lied for i in items}
    printed = {i["id"]: target_text(i["target"]) for i in items}
    counts = {
        "n": sum(truth.values()),
        "m": m,
        "failing": tuple({**i, "pass": False} for i in items if not truth[i["id"]])[:FAILING_KEPT],
        "targets": printed,
        "lied": lied,
    }
    if previous is not None and m < previous - removed:
        return _closed(
            "dropped-items", f"{m} items, the last run had {previous}", receipt, **counts
        )
    tightened: list[str] = []
    if contract is not None:
        scoped = {k: v for k, v in contract.items() if not only or fnmatch.fnmatchcase(k, only)}
        missing, loosened, tightened, _ = changes(scoped, printed)
        if missing:
            detail = (
                f"the plan's target {missing[0]} has no item in the gate's output"
                if plan
                else f"item {missing[0]} of the contract is missing (items are never removed "
                "or renamed but by a recalibration)"
            )
            return _closed("unbound" if plan else "dropped-items", detail, receipt, **counts)
        moved = loosened + ([] if tighten else tightened)
        if moved:
            reason = "unbound" if plan else "loosened" if tighten else "target-moved"
            i = moved[0]
            return _closed(
                reason,
                f"item {i} prints target {printed[i]!r}; "
                f"{'the plan' if plan else 'the contract'} says {scoped[i]!r}",
                receipt,
                **counts,
            )
    return GateResult(
        passed=all(truth.values()),
        exit_code=code,
        duration=float(receipt.get("duration") or 0),
        tightened=tuple(tightened),
        **counts,
    )
