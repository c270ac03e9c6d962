"""The replay script's first half: run data into a timeline and a chart.

Reads the embedded document, builds one SVG track per lane and one block per turn, folds the
points once into per-point states that share unchanged parts (`fold`), lays time out on the
timeline (`X`: linear, with long idle stretches drawn as narrow breaks) and draws the spend
and best-value chart. `replay_panels` is the second half; `assets.JS` joins the two inside
one function, so they share its scope. Run data only ever reaches the page as `textContent`.
"""

from __future__ import annotations

__all__ = ["JS_TIMELINE"]

JS_TIMELINE = r"""
const $ = (id) => document.getElementById(id);
const doc = await readDoc($("fc-data"));
const run = doc.run || {};
const lanes = (doc.lanes || []).map((l) => ({name: l.name, roles: l.roles || [],
  solo: !!l.solo}));
const live = document.body.dataset.stream || "";
const t0 = doc.t0 ? Date.parse(doc.t0) : 0;
const ROW = 22;  // narration row height: fixed so the list can be virtual
const LANE0 = [null, null, 0, null, 0, 0, 0, 0, null, 0, null, null, null, null, null];
const P = [], S = [], B = [], PB = [], R = [], RA = Object.create(null), open = [];
const rows = [], labels = [], laneRows = [];
let cur = 0, timer = null, queued = false, hi = null, planRow = null, lastTs = 0;
const shown = {pub: null, cur: null, rd: null, bd: undefined, pv: -1, al: -1};
const S0 = {ln: [], pub: [], cur: [], rd: [], sp: [0, 0, 0, 0, 0], spT: 0,
  lim: [null, null, null, null], bd: null, st: "starting", pv: 0, al: 0};
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
};
const money = (v) => "$" + (+v || 0).toFixed(4);
const num = (v) => (v === null || v === undefined) ? "—" : (+v).toLocaleString("en-US");
function dur(s) {
  s = Math.max(0, +s || 0);
  if (s < 60) return s.toFixed(1) + " s";
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = Math.floor(s % 60);
  return (h ? h + "h" + String(m).padStart(2, "0") + "m" : m + "m") + String(r).padStart(2, "0")
    + "s";
}
const rel = (ms) => "+" + dur(ms / 1000);
const clock = (ms) => t0 ? new Date(t0 + ms).toISOString().slice(11, 19) : "";
// What tells an actor apart from its lane's other roles (the track names the lane already):
// what follows the prefix the roles share; roles with nothing in common stay whole.
function short(a, li) {
  if (!a) return "";
  const roles = (lanes[li] || {}).roles || [];
  if (roles.length < 2 || !roles.includes(a)) return String(a);
  let n = 0;
  while (roles.every((r) => r[n] !== undefined && r[n] === roles[0][n])) n++;
  return a.slice(n) || a;
}
const SVG = "http://www.w3.org/2000/svg";
const svgEl = (tag, attrs) => {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
};

// A track is one SVG of rects (in its <g>, marks after them): thousands of turns stay a
// handful of paint chunks for the browser, where thousands of positioned elements would make
// every repaint slow.
function track(name) {
  const row = el("div", "trow"), svg = svgEl("svg", {});
  row.dataset.lane = name;
  svg.appendChild(svgEl("g", {}));
  row.appendChild(svg);
  return row;
}
function addLane(name, roles, solo) {
  lanes.push({name, roles: roles || [], solo: !!solo});
  R.push([]); open.push(null);
  const li = lanes.length - 1, row = track(name);
  const lab = el("div", "tl-label" + (solo ? " solo" : ""), name);
  // A track of a role's turns outside lanes (planning, judging) is not a lane: it says so.
  lab.title = solo ? name + ": turns outside lanes" : (roles || []).join(" ⇄ ");
  $("tl-labels").appendChild(lab); $("tl-rows").appendChild(row);
  labels[li] = lab; laneRows[li] = row;
  const tr = el("tr");
  for (let k = 0; k < 7; k++) tr.appendChild(el("td", k >= 5 ? "num" : ""));
  tr.firstChild.textContent = name;
  if (solo) { tr.className = "solo"; tr.firstChild.title = name + ": turns outside lanes"; }
  $("lanes").tBodies[0].appendChild(tr); rows[li] = tr;
}
// addLane() appends to `lanes` as it builds each lane's DOM: start it from empty.
lanes.splice(0).forEach((l) => addLane(l.name, l.roles, l.solo));
S0.ln = lanes.map(() => LANE0); S0.pub = lanes.map(() => 0); S0.rd = lanes.map(() => null);
S0.cur = lanes.map(() => lanes.map(() => 0));

function planningRow() {
  if (planRow) return planRow;
  const lab = el("div", "tl-label", "planning"), row = track("planning");
  $("tl-labels").prepend(lab); $("tl-rows").prepend(row);
  planRow = row;
  return row;
}

// A turn block is data (B) until `layout` draws its track. A block's tooltip is made when
// the pointer first reaches it (`tipped`): tens of thousands of <title> elements made up
// front would cost a long run's page most of its opening time.
function block(b) {
  b.row = b.l < 0 ? planningRow() : laneRows[b.l];
  B.push(b);
  return B.length - 1;
}
const tipText = (b) => b.a + (b.l < 0 ? " · planning" : " · turn " + b.n) + " · "
  + (b.rs || b.st) + (b.t1 === null ? "" : " · " + (+b.du).toFixed(1) + " s · " + money(b.c));
function tipped(e) {
  const tip = e.querySelector("title") || e.appendChild(document.createElementNS(SVG, "title"));
  const more = +(e.dataset.n || 1) - 1;
  tip.textContent = tipText(B[+e.dataset.i]) + (more ? " (and the " + more + " turns after it,"
    + " too narrow to draw apart)" : "");
}

// A mark on a track, as the event shows it (a pull request merged, a gate run): its tone is
// info, good or bad. Their key joins the timeline's key with the first mark (runs without
// marks do not show it); a mark's own words are its tooltip.
const M = [];

// A flow's panels (`F` deltas: rows of tables the flow names). Each row's history is kept once
// (`at`: [point, cells so far]); a state holds only how many rows were given by then (`pv`),
// so a point's table is each row's last version at or before it. Alerts (`X`) likewise.
const PN = [], PNI = Object.create(null), AL = [];
function panelRows(rowsIn, i) {
  for (const [name, key, cells] of rowsIn) {
    let pn = PNI[name];
    if (!pn) {
      pn = PNI[name] = {name, cols: [], colAt: Object.create(null), keys: [],
        at: Object.create(null)};
      PN.push(pn);
    }
    for (const c of Object.keys(cells)) {
      if (!(c in pn.colAt)) { pn.colAt[c] = i; pn.cols.push(c); }
    }
    let h = pn.at[key];
    if (!h) { h = pn.at[key] = []; pn.keys.push(key); }
    // Null-prototype rows: a cell named `__proto__` stays a cell.
    h.push([i, Object.assign(Object.create(null), h.length ? h[h.length - 1][1] : {}, cells)]);
  }
}
const MARK_KEY = [["mk-info", "mark"], ["mk-good", "success"], ["mk-bad", "refused or failed"]];
function mark(li, t, m, i) {
  if (!M.length) {
    for (const [cls, label] of MARK_KEY) {
      const s = el("span", "", null);
      s.appendChild(el("i", "sw mk-sw " + cls));
      s.appendChild(document.createTextNode(label));
      $("tl-key").appendChild(s);
    }
  }
  const e = svgEl("circle", {cy: 13, r: 5, cx: X(t) + "%", "class": "mk mk-" + m[1],
    "data-p": i});
  const tip = document.createElementNS(SVG, "title");
  tip.textContent = m[0];
  e.appendChild(tip);
  laneRows[li].firstChild.appendChild(e);
  M.push({el: e, t});
}

function fold(p) {
  const i = P.length, d = p.d || {}, prev = i ? S[i - 1] : S0;
  const s = {ln: prev.ln, pub: prev.pub, cur: prev.cur, rd: prev.rd, sp: prev.sp,
    spT: prev.spT, lim: prev.lim, bd: prev.bd, st: prev.st, pv: prev.pv, al: prev.al};
  if (d.F) { panelRows(d.F, i); s.pv = prev.pv + d.F.length; }
  if (d.X) { AL.push([i, d.X]); s.al = AL.length; }
  if (d.N) {
    addLane(d.N[0], d.N[1], d.N[2]);
    s.ln = s.ln.concat([LANE0]); s.pub = s.pub.concat([0]); s.rd = s.rd.concat([null]);
    s.cur = s.cur.map((r) => r.concat([0])).concat([lanes.map(() => 0)]);
  }
  if (d.L) { s.ln = s.ln.slice(); for (const [li, row] of d.L) s.ln[li] = row; }
  if (d.S) { s.sp = d.S; s.spT = p.t; }
  if (d.B) s.lim = d.B;
  if (d.P) {
    const [li, id, n] = d.P;
    R[li].push(id); RA[id] = n; s.pub = s.pub.slice(); s.pub[li] = R[li].length;
  }
  if (d.R) RA[d.R[0]] = d.R[1];
  if (d.A) {
    s.cur = s.cur.slice();
    for (const [c, src, n] of d.A) { s.cur[c] = s.cur[c].slice(); s.cur[c][src] = n; }
  }
  if (d.W) s.bd = d.W;
  if (d.I) { s.rd = s.rd.slice(); s.rd[d.I[0]] = d.I[1]; }
  if (d.st) s.st = d.st;
  PB[i] = -1;
  if (d.o && p.l >= 0) {
    open[p.l] = PB[i] = block({l: p.l, a: p.a, n: d.o[0], t0: p.t, t1: null, i0: i, i1: -1,
      st: "open", rs: null, c: 0, du: 0});
  }
  if (d.e && p.l >= 0) {
    let k = open[p.l];
    if (k === null || k === undefined) {
      k = block({l: p.l, a: p.a, n: "?", t0: p.t - d.e[2] * 1000, t1: null, i0: i, i1: -1,
        st: "open", rs: null, c: 0, du: 0});
    }
    const b = B[k];
    b.t1 = p.t; b.i1 = i; b.st = d.e[0]; b.c = d.e[1]; b.du = d.e[2]; b.rs = d.e[3];
    open[p.l] = null; PB[i] = k;
  }
  if (d.m && p.l >= 0) mark(p.l, p.t, d.m, i);
  P.push(p); S.push(s);
}

const span = () => Math.max(1, P.length ? P[P.length - 1].t : 1);

// Time on the timeline and the chart: linear, except that a long stretch with nothing under
// way (a run stopped for the night, or every lane waiting out a usage limit) is drawn as a
// narrow break rather than as empty width. BR: [{t0, t1, down}], in time order.
let BR = [], keep = 0, total = 1;
const BREAK_MS = 60000, BREAK_SHARE = 0.05, KEEP_SHARE = 0.02;
function busy(s) { return s.st === "planning" || s.ln.some((r) => r && r[0]); }
function breaks() {
  BR = [];
  const w = span(), min = Math.max(BREAK_MS, BREAK_SHARE * w);
  for (let i = 1; i < P.length; i++) {
    const gap = P[i].t - P[i - 1].t, down = P[i].k === "run_resumed";
    if (gap >= min && (down || !busy(S[i - 1]))) BR.push({t0: P[i - 1].t, t1: P[i].t, down});
  }
  const cut = BR.reduce((a, b) => a + (b.t1 - b.t0), 0);
  keep = BR.length ? Math.max(1, KEEP_SHARE * (w - cut)) : 0;
  total = Math.max(1, w - cut + keep * BR.length);
}
// t (ms since the first point) as a percentage of the timeline's width.
function X(t) {
  let off = 0;
  for (const b of BR) {
    if (t <= b.t0) break;
    if (t < b.t1) { off += (t - b.t0) - keep * (t - b.t0) / (b.t1 - b.t0); break; }
    off += (b.t1 - b.t0) - keep;
  }
  return 100 * (t - off) / total;
}
function breakMarks() {
  const box = $("tl-brk");
  box.replaceChildren();
  // A strip above the tracks for the breaks' labels, which are wider than the breaks.
  $("timeline").classList.toggle("brks", BR.length > 0);
  for (const b of BR) {
    const e = el("div", "brk"), what = b.down ? "run stopped" : "nothing under way";
    e.style.left = X(b.t0) + "%";
    e.style.width = (X(b.t1) - X(b.t0)) + "%";
    e.title = what + " for " + dur((b.t1 - b.t0) / 1000) + " (" + clock(b.t0) + " → "
      + clock(b.t1) + "), drawn narrow";
    e.appendChild(el("span", "", (b.down ? "stopped " : "idle ") + dur((b.t1 - b.t0) / 1000)));
    box.appendChild(e);
  }
}

// Sizes read from the page only while it holds no blocks (on opening, and when the window is
// resized): a read with tens of thousands of blocks laid in would make the browser lay them
// out once more. A track's offset is worked out instead: TRACK_H is `.trow`'s height and
// BRK_PAD the strip that `#timeline.brks` adds above the tracks for the breaks' labels.
let px = 1000, storyH = 360;
const TRACK_H = 26, BRK_PAD = 15;
function measure() {
  px = $("tl-rows").clientWidth || 1000;
  storyH = $("story").clientHeight || 360;
}
function layout() {
  breaks();
  breakMarks();
  const end = P.length ? P[P.length - 1].t : 0, tops = new Map(), onRow = new Map();
  let k = 0;
  for (const row of $("tl-rows").children) {
    tops.set(row, (BR.length ? BRK_PAD : 0) + TRACK_H * k++);
    onRow.set(row, []);
  }
  for (let j = 0; j < B.length; j++) {
    const b = B[j], a = Math.max(0, b.t0), z = b.t1 === null ? end : b.t1;
    b.top = tops.get(b.row) || 0;
    // A failed turn is often over in a moment: drawn at least 4 px wide, so it is seen.
    b.xp = X(a); b.wp = Math.max(0, X(z) - b.xp, b.st === "failed" ? 400 / px : 0);
    b.x = b.xp + "%"; b.w = b.wp + "%";
    onRow.get(b.row).push(j);
  }
  for (const [row, js] of onRow) drawTrack(row.firstChild.firstChild, js);
  for (const m of M) m.el.setAttribute("cx", X(m.t) + "%");
  hi = undefined;  // blocks moved: place the current-turn frame again
  chart();
  alignChart();
}

// One rect a turn, except where turns are narrower than MIN_PX (a long run on a narrow
// window): such a turn is drawn together with the turns after it on its track until the rect
// is that wide, in the first one's colours (its tooltip says how many it stands for). A
// 100,000-event run has some 30,000 turns and a track no more than a few thousand pixels.
const MIN_PX = 2;
function drawTrack(g, js) {
  const out = [], least = 100 * MIN_PX / px;
  for (let n = 0; n < js.length; n++) {
    const b = B[js[n]], first = n;
    let right = b.xp + b.wp;
    while (right - b.xp < least && n + 1 < js.length) {
      n++;
      right = Math.max(right, B[js[n]].xp + B[js[n]].wp);
    }
    const w = right - b.xp, e = svgEl("rect", {y: 3, height: 20, rx: 3, "data-i": js[first],
      x: b.x, width: w + "%", "class": "blk s-" + b.st + (b.rs ? " r-" + b.rs : "")});
    if (n > first) e.dataset.n = String(n - first + 1);
    out.push(e);
    // A label only where it fits: "a 12" needs about 30 px.
    if (n === first && w * px >= 3000) {
      const label = svgEl("text", {"class": "bl", y: 17, x: b.x, dx: 4});
      label.textContent = b.l < 0 ? "plan" : short(b.a, b.l) + " " + b.n;
      out.push(label);
    }
  }
  g.replaceChildren(...out);
}

let chartPh = null, AX = {cost: null, best: null};
// The chart's axis values: each line's lowest and highest, at the heights they are drawn
// (cost on the left, best on the right, in their lines' colours).
function axisLabels(c) {
  // An <svg> has no offsetTop: its place in the box comes from the two rectangles.
  const ax = $("chart-ax"), r = c.getBoundingClientRect();
  const b = c.parentNode.getBoundingClientRect(), h = r.height || 160, top = r.top - b.top;
  ax.replaceChildren();
  const put = (v, yv, cls, side, fmt) => {
    const e = el("span", cls + " ax", fmt(v));
    e.style.top = (top + h * yv / 160 - 6) + "px";
    if (side === "l") e.style.left = (r.left - b.left + 2) + "px";
    else e.style.right = (b.right - r.right + 2) + "px";
    ax.appendChild(e);
  };
  const both = (span, cls, side, fmt) => {
    if (!span) return;
    if (span[0] === span[1]) { put(span[0], 80, cls, side, fmt); return; }
    put(span[1], 10, cls, side, fmt); put(span[0], 150, cls, side, fmt);
  };
  both(AX.cost, "k-cost", "l", money);
  both(AX.best, "k-best", "r", (v) => String(v));
}
// The chart spans exactly the tracks' width, where the timeline's tracks start: the same
// time is then at the same x in both, and so are their cursors.
function alignChart() {
  const c = $("chart"), box = c.parentNode, rows = $("tl-rows").getBoundingClientRect();
  if (!rows.width) { axisLabels(c); return; }
  const inner = box.getBoundingClientRect().left + box.clientLeft
    + parseFloat(getComputedStyle(box).paddingLeft || "0");
  c.style.marginLeft = Math.max(0, rows.left - inner) + "px";
  c.style.width = rows.width + "px";
  axisLabels(c);
}
function chart() {
  const svg = $("chart"), cost = [], best = [];
  let c0 = null, b0 = null;
  for (let i = 0; i < P.length; i++) {
    const s = S[i], x = 10 * X(P[i].t);
    if (s.sp[0] !== c0) {  // a step: hold the old value up to x, then jump
      if (c0 !== null) cost.push([x, c0]);
      cost.push([x, s.sp[0]]); c0 = s.sp[0];
    }
    const bv = s.bd && s.bd.b ? s.bd.b[0] : null;
    if (bv !== b0 && bv !== null) {
      if (b0 !== null) best.push([x, b0]);
      best.push([x, bv]); b0 = bv;
    }
  }
  if (c0 !== null) cost.push([1000, c0]);
  if (b0 !== null) best.push([1000, b0]);
  svg.replaceChildren();
  const line = (pts, cls, colour) => {
    if (!pts.length) return;
    const vs = pts.map((q) => q[1]), lo = Math.min(...vs), hi2 = Math.max(...vs);
    const k = Math.max(1, Math.ceil(pts.length / 2000));
    const keep = pts.filter((_, j) => j % k === 0 || j === pts.length - 1);
    // (Halved first: agents report their own spend, and two huge values' distance can
    // overflow a double.)
    const y = (v) => hi2 === lo ? 80 : 150 - 140 * ((v / 2 - lo / 2) / (hi2 / 2 - lo / 2));
    svg.appendChild(svgEl("polyline", {"class": cls, fill: "none", stroke: colour,
      "stroke-width": "2", "vector-effect": "non-scaling-stroke",
      points: keep.map((q) => q[0].toFixed(1) + "," + y(q[1]).toFixed(1)).join(" ")}));
  };
  line(cost, "cost", "#1c7ed6");
  line(best, "best", "#2f9e44");
  const span2 = (pts) => pts.length ? [Math.min(...pts.map((q) => q[1])),
    Math.max(...pts.map((q) => q[1]))] : null;
  AX = {cost: span2(cost), best: span2(best)};
  chartPh = svgEl("line", {x1: 0, x2: 0, y1: 0, y2: 160, stroke: "#d9480f",
    "stroke-width": "2", "vector-effect": "non-scaling-stroke"});
  svg.appendChild(chartPh);
  // Each line has its own scale, from its lowest to its highest value: say which.
  const lg = $("legend"), last = S.length ? S[S.length - 1] : S0, bb = last.bd && last.bd.b;
  lg.replaceChildren(el("span", "k-cost", "■ cumulative cost, $0 → " + money(last.sp[0])));
  lg.appendChild(el("span", "k-best", bb ? "  ■ best " + bb[4] + " (" + bb[5] + "), "
    + best[0][1] + " → " + bb[0] : "  ■ best: no ranked submission"));
}

"""
