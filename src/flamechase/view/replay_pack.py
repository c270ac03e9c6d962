"""The replay document in the page: columns, gzip, base64; and its reader, in Python and JS.

A run of 100,000 events is about 40 MB as one JSON object per point (`replay` module
docstring), most of it the same keys and field positions again and again. In the page it is
packed instead, as one JSON object of columns:

    {"v": 2, "run", "lanes", "t0"   as in the document,
     "n": points, "s": [strings]   the kinds, actors and tags, each once,
     "q", "t": number columns       seq and ms since t0,
     "k", "a", "g": [index]         positions in "s" (-1: null),
     "l": [lane], "x": [sentence],
     "d": {key: {"i": [point index, as the step from the key's previous point],
                 "v": [values] | "c": [number columns] (S) | "e": [lane rows] (L)}}}

A number column is {"z": Z, "d": steps} when every value is a decimal with at most Z places
that a double holds exactly (value = running sum of steps / 10**Z; "f": 1 when some were
floats, so that a whole 2.0 comes back as a float), else {"r": values}. A
lane row (`L`) is [lane, length, code, value, ...]: only the fields that changed since that
lane's previous row, each as code 3f (the value), 3f+1 (an integer step from the previous
value) or 3f+2 (an integer step from the point's time: a turn's start is usually its own
point's). That JSON is gzipped (deterministically: no time in its header) and base64'd into
the page, which unpacks it with the browser's own DecompressionStream. At 100,000 events
that is about 3 MB instead of 36 (bench/views_replay.py measures it).

`read_document` is the one reader of a page's document (the tests read pages through it);
`JS_UNPACK` is the page's, written to give exactly the same points.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["JS_UNPACK", "PageUnreadable", "embed", "pack", "read_document", "unpack"]

VERSION = 2
_POINT = ("q", "t", "k", "l", "a", "x", "g", "d")
_SAFE = 2**53  # beyond it a double no longer holds every integer
_PLACES = (0, 1, 2, 3, 4, 5, 6)
_LANE_ROW = "L"
_SPEND = "S"
_DATA = re.compile(r'<script type="application/octet-stream" id="fc-data"[^>]*>([^<]*)</script>')


class PageUnreadable(ValueError):
    """The page holds no replay document this version can read."""


def _is_num(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def _num_col(values: Sequence[Any]) -> dict[str, Any]:
    if all(_is_num(v) for v in values):
        for z in _PLACES:
            steps = _scaled_steps(values, z)
            if steps is not None:
                # "f": some were floats; whole numbers come back as floats too.
                floats = any(type(v) is float for v in values)
                return {"z": z, "d": steps, **({"f": 1} if floats else {})}
    return {"r": list(values)}


def _scaled_steps(values: Sequence[float], z: int) -> list[int] | None:
    """The steps between the values times 10**z, if each is an integer that gives the value
    back exactly; else None."""
    scale, prev, steps = 10**z, 0, []
    for v in values:
        if abs(v) >= _SAFE:
            return None
        n = round(v * scale)
        if abs(n) >= _SAFE or (n if z == 0 else n / scale) != v:
            return None
        steps.append(n - prev)
        prev = n
    return steps


def _num_values(col: Mapping[str, Any]) -> list[Any]:
    if "r" in col:
        return list(col["r"])
    z, acc, out = int(col["z"]), 0, []
    scale, floats = 10**z, bool(col.get("f"))
    for step in col["d"]:
        acc += step
        out.append(acc / scale if z or floats else acc)
    return out


def _same(a: Any, b: Any) -> bool:
    # 1 and True, 1 and 1.0 are equal in Python but not as JSON: the page must get each back.
    return type(a) is type(b) and a == b


def _is_int(v: Any) -> bool:
    return type(v) is int and abs(v) < _SAFE


def _lane_rows(entries: list[tuple[int, list[Any]]], ts: list[Any]) -> list[list[Any]]:
    """`L` entries (point index, [lane, row]) as changed fields against the lane's last row."""
    last: dict[Any, list[Any]] = {}
    out: list[list[Any]] = []
    for i, (lane, row) in entries:
        before = last.get(lane, [])
        enc: list[Any] = [lane, len(row)]
        t = ts[i]
        for f, v in enumerate(row):
            old = before[f] if f < len(before) else None
            if f < len(before) and _same(old, v):
                continue
            code, best = 3 * f, v
            if _is_int(v):
                # The shortest of the value and the two steps (the number's digits).
                width = len(str(v))
                steps = ((1, v - old if _is_int(old) else None), (2, v - t if _is_int(t) else None))
                for c, step in steps:
                    if step is not None and len(str(step)) < width:
                        code, best, width = 3 * f + c, step, len(str(step))
            enc += (code, best)
        out.append(enc)
        last[lane] = list(row)
    return out


def _lane_rows_back(encs: list[list[Any]], idx: list[int], ts: list[Any]) -> list[list[Any]]:
    last: dict[Any, list[Any]] = {}
    out: list[list[Any]] = []
    for i, enc in zip(idx, encs, strict=True):
        lane, size = enc[0], enc[1]
        before = last.get(lane, [])
        row = [before[f] if f < len(before) else None for f in range(size)]
        for k in range(2, len(enc), 2):
            code, v = enc[k], enc[k + 1]
            f, how = divmod(code, 3)
            row[f] = v if how == 0 else row[f] + v if how == 1 else ts[i] + v
        out.append([lane, row])
        last[lane] = row
    return out


def _steps(idx: list[int]) -> list[int]:
    return [b - a for a, b in zip([0, *idx], idx, strict=False)]


def _unsteps(steps: list[int]) -> list[int]:
    acc, out = 0, []
    for s in steps:
        acc += s
        out.append(acc)
    return out


def pack(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document (`replay.build_document`'s shape) as columns."""
    points: list[Mapping[str, Any]] = list(doc.get("points") or [])
    table: dict[Any, int] = {}

    def ref(v: Any) -> int:
        if v is None:
            return -1
        return table.setdefault(v, len(table))

    ts = [p.get("t") for p in points]
    keys: dict[str, tuple[list[int], list[Any]]] = {}
    for i, p in enumerate(points):
        for key, v in (p.get("d") or {}).items():
            at, vals = keys.setdefault(key, ([], []))
            at.append(i)
            vals.append(v)
    deltas: dict[str, dict[str, Any]] = {}
    for key, (at, vals) in keys.items():
        col: dict[str, Any] = {"i": _steps(at)}
        sizes = {len(v) if isinstance(v, list) else -1 for v in vals}
        if key == _SPEND and len(sizes) == 1 and -1 not in sizes:
            col["c"] = [_num_col(c) for c in zip(*vals, strict=True)]
        elif key == _LANE_ROW and all(
            isinstance(v, list) and all(isinstance(e, list) and len(e) == 2
                                        and isinstance(e[1], list) for e in v)
            for v in vals
        ):  # fmt: skip
            col["n"] = [len(v) for v in vals]
            flat = [(i, e) for i, v in zip(at, vals, strict=True) for e in v]
            col["e"] = _lane_rows(flat, ts)
        else:
            col["v"] = vals
        deltas[key] = col
    packed = {
        "v": VERSION,
        "run": doc.get("run") or {},
        "lanes": doc.get("lanes") or [],
        "t0": doc.get("t0"),
        "n": len(points),
        "q": _num_col([p.get("q") for p in points]),
        "t": _num_col(ts),
        "k": [ref(p.get("k")) for p in points],
        "a": [ref(p.get("a")) for p in points],
        "g": [ref(p.get("g")) for p in points],
        "l": [p.get("l") for p in points],
        "x": [p.get("x") for p in points],
        "d": deltas,
    }
    packed["s"] = list(table)
    return packed


def unpack(packed: Mapping[str, Any]) -> dict[str, Any]:
    """The document back from its columns: exactly the points `pack` was given."""
    if packed.get("v") != VERSION:
        raise PageUnreadable(f"replay document version {packed.get('v')!r}, not {VERSION}")
    n, strs = int(packed["n"]), packed["s"]

    def deref(col: list[int]) -> list[Any]:
        return [None if j < 0 else strs[j] for j in col]

    qs, ts = _num_values(packed["q"]), _num_values(packed["t"])
    ks, actors, tags = deref(packed["k"]), deref(packed["a"]), deref(packed["g"])
    ds: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, col in packed["d"].items():
        idx = _unsteps(col["i"])
        if "c" in col:
            vals: list[Any] = [list(v) for v in zip(*map(_num_values, col["c"]), strict=True)]
        elif "e" in col:
            flat_at = [i for i, c in zip(idx, col["n"], strict=True) for _ in range(c)]
            flat = iter(_lane_rows_back(col["e"], flat_at, ts))
            vals = [[next(flat) for _ in range(c)] for c in col["n"]]
        else:
            vals = col["v"]
        for i, v in zip(idx, vals, strict=True):
            ds[i][key] = v
    cols = (qs, ts, ks, packed["l"], actors, packed["x"], tags, ds)
    points = [dict(zip(_POINT, row, strict=True)) for row in zip(*cols, strict=True)]
    return {
        "v": 1,
        "run": packed["run"],
        "lanes": packed["lanes"],
        "t0": packed["t0"],
        "points": points,
    }


def embed(doc: Mapping[str, Any]) -> str:
    """The page's data element: the packed document, gzipped, as base64 (which holds no
    character that could end the element, whatever agents wrote)."""
    # ASCII escapes: agent text may hold a lone surrogate, which has no UTF-8 form; as an
    # escape it reaches the page's JSON.parse (and `read_document`) as it was.
    text = json.dumps(pack(doc), ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    raw = gzip.compress(text.encode("ascii"), compresslevel=6, mtime=0)
    return (
        '<script type="application/octet-stream" id="fc-data" data-encoding="gzip+base64">'
        + base64.b64encode(raw).decode("ascii")
        + "</script>"
    )


def read_document(page: str) -> dict[str, Any]:
    """The document a replay page holds, as `replay.build_document` made it."""
    m = _DATA.search(page)
    if m is None:
        raise PageUnreadable("no replay data in this page (not written by flamechase show?)")
    try:
        packed = json.loads(gzip.decompress(base64.b64decode(m.group(1), validate=True)))
    except (ValueError, OSError, EOFError) as exc:
        raise PageUnreadable(f"the page's replay data is damaged: {exc}") from None
    return unpack(packed)


# The page's reader: the same steps as `unpack`, giving the same points. Its numbers are
# doubles, as JSON.parse gives: n / 10**z there is the same correctly rounded division.
JS_UNPACK = r"""
async function readDoc(node) {
  const text = node.textContent.trim();
  let bytes;
  if (Uint8Array.fromBase64) bytes = Uint8Array.fromBase64(text);
  else {
    const bin = atob(text);
    bytes = new Uint8Array(bin.length);
    for (let k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
  }
  const stream = new Response(bytes).body.pipeThrough(new DecompressionStream("gzip"));
  return unpack(JSON.parse(await new Response(stream).text()));
}
function numValues(col) {
  if (col.r) return col.r;
  const scale = 10 ** col.z, out = new Array(col.d.length);
  let acc = 0;
  for (let k = 0; k < col.d.length; k++) { acc += col.d[k]; out[k] = col.z ? acc / scale : acc; }
  return out;
}
function unsteps(steps) {
  const out = new Array(steps.length);
  let acc = 0;
  for (let k = 0; k < steps.length; k++) { acc += steps[k]; out[k] = acc; }
  return out;
}
function laneRowsBack(encs, at, ts) {
  const last = new Map(), out = new Array(encs.length);
  for (let j = 0; j < encs.length; j++) {
    const enc = encs[j], lane = enc[0], before = last.get(lane) || [], row = new Array(enc[1]);
    for (let f = 0; f < enc[1]; f++) row[f] = f < before.length ? before[f] : null;
    for (let k = 2; k < enc.length; k += 2) {
      const f = Math.floor(enc[k] / 3), how = enc[k] % 3, v = enc[k + 1];
      row[f] = how === 0 ? v : how === 1 ? row[f] + v : ts[at[j]] + v;
    }
    out[j] = [lane, row];
    last.set(lane, row);
  }
  return out;
}
function unpack(pk) {
  if (pk.v !== 2) throw new Error("replay document version " + pk.v + ", not 2");
  const n = pk.n, s = pk.s, qs = numValues(pk.q), ts = numValues(pk.t);
  const ref = (j) => j < 0 ? null : s[j];
  const ds = new Array(n);
  for (let i = 0; i < n; i++) ds[i] = {};
  for (const key of Object.keys(pk.d)) {
    const col = pk.d[key], idx = unsteps(col.i);
    let vals = col.v;
    if (col.c) {
      const cs = col.c.map(numValues);
      vals = idx.map((_, j) => cs.map((c) => c[j]));
    } else if (col.e) {
      const at = [];
      idx.forEach((i, j) => { for (let c = 0; c < col.n[j]; c++) at.push(i); });
      const flat = laneRowsBack(col.e, at, ts);
      let f = 0;
      vals = col.n.map((c) => flat.slice(f, f += c));
    }
    for (let j = 0; j < idx.length; j++) ds[idx[j]][key] = vals[j];
  }
  const points = new Array(n);
  for (let i = 0; i < n; i++) {
    points[i] = {q: qs[i], t: ts[i], k: ref(pk.k[i]), l: pk.l[i], a: ref(pk.a[i]), x: pk.x[i],
      g: ref(pk.g[i]), d: ds[i]};
  }
  return {v: 1, run: pk.run, lanes: pk.lanes, t0: pk.t0, points};
}
"""
