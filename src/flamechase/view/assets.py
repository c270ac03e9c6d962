"""The replay page's markup skeleton, CSS and JS: hand-written, inline, no library.

Kept as Python strings so they ship inside the package without package-data rules, and so
`replay.render_html` can pin them by hash in the page's Content-Security-Policy. The script
only ever puts run data into the page with `textContent` (agents write the summaries it
shows); it folds the embedded points once, incrementally, into per-point states that share
unchanged parts, and renders only the current point. The narration list is virtual: fixed
row height, only the rows in view exist.
"""

from __future__ import annotations

__all__ = ["CSS", "JS", "SKELETON"]

SKELETON = """\
<header id="hd"><h1><span id="flow"></span> <small id="rid"></small>
<span id="status" class="badge"></span><span id="livebadge" class="badge live" hidden>live</span>
</h1><div id="meta"></div></header>
<nav id="controls">
<button id="prev" type="button" title="previous point (←)">◀ Prev</button>
<button id="play" type="button" title="play / pause (space)">Play</button>
<button id="next" type="button" title="next point (→)">Next ▶</button>
<input id="bar" type="range" min="0" max="0" value="0" step="1" aria-label="point in the run">
<span id="pos"></span>
</nav>
<p id="now"><b id="now-n"></b> <span id="now-x"></span></p>
<section id="timeline" aria-label="timeline: one track per lane, one block per turn">
<div id="tl-labels"></div><div id="tl-area"><div id="tl-rows"></div>
<div id="tl-fut"></div><div id="tl-hi" hidden></div><div id="tl-ph"></div></div></section>
<section id="lanes-box"><h2>Lanes</h2><table id="lanes"><thead><tr><th>Lane</th>
<th>State</th><th>On turn</th><th>Elapsed</th><th>Last report</th><th>Turns</th>
<th>Failures</th></tr></thead><tbody></tbody></table></section>
<div id="grid">
<section><h2>Pending reports</h2><div id="pending"></div></section>
<section><h2>Leaderboard</h2><div id="board"></div></section>
<section><h2>Spend</h2><table id="spend"><tbody></tbody></table></section>
</div>
<section id="chart-box"><h2>Spend and best over time</h2><div id="legend"></div>
<svg id="chart" viewBox="0 0 1000 160" preserveAspectRatio="none" role="img"
 aria-label="cumulative spend and leaderboard best"></svg></section>
<section><h2>Narration <small id="story-n"></small></h2>
<div id="story" tabindex="0"><div id="story-in"></div></div></section>"""

CSS = """
:root{--fg:#1d232b;--mut:#6b7480;--bd:#dde2e8;--bg:#fff;--pan:#f6f8fa;--acc:#d9480f}
*{box-sizing:border-box}
body{margin:0;padding:12px 18px;font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;
color:var(--fg);background:var(--bg)}
h1{font-size:18px;margin:0 0 4px}h1 small{color:var(--mut);font-weight:normal;font-size:12px}
h2{font-size:13px;margin:0 0 6px;text-transform:uppercase;letter-spacing:.04em;color:var(--mut)}
.badge{display:inline-block;margin-left:8px;padding:1px 7px;border-radius:9px;font-size:11px;
background:#e7ecf1;vertical-align:middle}
.badge.live{background:#d3f9d8;color:#2b8a3e}
#meta{color:var(--mut);font-size:12px}#meta details{display:inline}
#meta summary{cursor:pointer;display:inline}
#controls{display:flex;gap:8px;align-items:center;margin:10px 0 4px;position:sticky;top:0;
background:var(--bg);padding:6px 0;z-index:5;border-bottom:1px solid var(--bd)}
button{font:inherit;padding:3px 10px;border:1px solid var(--bd);border-radius:5px;
background:var(--pan);cursor:pointer}
button:hover{background:#eef1f4}
#bar{flex:1;min-width:120px}
#pos{font-variant-numeric:tabular-nums;color:var(--mut);white-space:nowrap}
#now{margin:6px 0 10px;min-height:2.8em}#now-n{color:var(--acc)}
#timeline{display:flex;border:1px solid var(--bd);border-radius:6px;background:var(--pan);
padding:6px 0}
#tl-labels{width:132px;flex:none}
.tl-label{height:26px;line-height:26px;padding:0 8px;white-space:nowrap;overflow:hidden;
text-overflow:ellipsis;font-weight:600}
#tl-area{position:relative;flex:1;margin-right:8px;overflow:hidden}
.trow{position:relative;height:26px;border-bottom:1px dashed #e3e7ec}
.trow svg{position:absolute;left:0;top:0;width:100%;height:26px;overflow:hidden}
.blk{fill:#868e96;stroke:rgba(0,0,0,.2);stroke-width:1;cursor:pointer}
.blk.r-progress{fill:#2f9e44}.blk.r-deliverable_ready{fill:#1c7ed6}
.blk.r-no_result{fill:#868e96}.blk.r-blocked{fill:#e8590c}
.blk.s-failed{fill:#e03131}.blk.s-interrupted{fill:#9c36b5}
.blk.s-limited{fill:#f59f00}.blk.s-open{fill:#fab005}
.blk.r-plan{fill:#0c8599}
.bl{fill:#fff;font-size:11px;pointer-events:none}
#tl-hi{position:absolute;height:24px;margin-top:1px;border:2px solid #111;border-radius:4px;
z-index:4;pointer-events:none;min-width:6px;will-change:transform}
#tl-rows{contain:layout paint}
#tl-ph,#tl-fut{position:absolute;top:0;bottom:0;left:0;width:100%;pointer-events:none;
will-change:transform}
#tl-ph{z-index:3;border-left:2px solid var(--acc)}
#tl-fut{z-index:1;background:rgba(246,248,250,.72)}
[hidden]{display:none!important}
#grid section,#story,#now,#pos{contain:content}
#grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:14px;
margin:14px 0}
#lanes td:first-child{white-space:nowrap;font-weight:600}
#grid section,#chart-box,#lanes-box{border:1px solid var(--bd);border-radius:6px;
padding:8px 10px}
#lanes-box{margin-top:14px;contain:content}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:2px 6px;border-bottom:1px solid #eef1f4;vertical-align:top}
th{font-weight:600;color:var(--mut);font-size:12px}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.st-turn{color:#e67700;font-weight:600}.st-held{color:#e03131;font-weight:600}
.st-paused{color:#f59f00}.st-idle{color:var(--mut)}
#pending div,#board div{margin:2px 0}.ids{color:var(--mut);font-size:12px}
.none{color:var(--mut)}
#chart{width:100%;height:160px;display:block;background:var(--pan);border-radius:4px}
#legend{font-size:12px;color:var(--mut);margin-bottom:4px}
.k-cost{color:#1c7ed6}.k-best{color:#2f9e44}
#story{position:relative;height:360px;overflow:auto;border:1px solid var(--bd);
border-radius:6px}
#story-in{position:relative}
.row{position:absolute;left:0;right:0;height:22px;line-height:22px;padding:0 8px;
white-space:nowrap;overflow:hidden;text-overflow:ellipsis;cursor:pointer}
.row:hover{background:#f1f3f5}.row.cur{background:#fff4e6}
.row b{display:inline-block;min-width:54px;color:var(--mut);font-weight:normal}
.row i{display:inline-block;min-width:74px;color:var(--mut);font-style:normal}
.row.g-report,.row.g-receive,.row.g-plan{color:#1864ab}.row.g-fail{color:#c92a2a}
.row.g-best{color:#2b8a3e;font-weight:600}.row.g-run{font-weight:600}
.tl-label.cur{color:var(--acc)}
"""

JS = r"""
(() => {
"use strict";
const $ = (id) => document.getElementById(id);
const doc = JSON.parse($("fc-data").textContent);
const run = doc.run || {};
const lanes = (doc.lanes || []).map((l) => ({name: l.name, roles: l.roles || []}));
const live = document.body.dataset.stream || "";
const t0 = doc.t0 ? Date.parse(doc.t0) : 0;
const ROW = 22;  // narration row height: fixed so the list can be virtual
const LANE0 = [null, null, 0, null, 0, 0, 0, 0, null, 0, null, null, null, null];
const P = [], S = [], B = [], PB = [], R = [], RA = Object.create(null), open = [];
const rows = [], labels = [], laneRows = [];
let cur = 0, timer = null, queued = false, hi = null, planRow = null, lastTs = 0;
const shown = {pub: null, cur: null, bd: undefined};
const S0 = {ln: [], pub: [], cur: [], sp: [0, 0, 0, 0, 0], spT: 0,
  lim: [null, null, null, null], bd: null, st: "starting"};
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
const short = (a) => a ? String(a).replace(/^.*_actor_/, "") : "";
const SVG = "http://www.w3.org/2000/svg";
const svgEl = (tag, attrs) => {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
};

// A track is one SVG of rects: thousands of turns stay a handful of paint chunks for the
// browser, where thousands of positioned elements would make every repaint slow.
function track(name) {
  const row = el("div", "trow"), svg = svgEl("svg", {});
  row.dataset.lane = name;
  row.appendChild(svg);
  return row;
}
function addLane(name, roles) {
  lanes.push({name, roles: roles || []});
  R.push([]); open.push(null);
  const li = lanes.length - 1, lab = el("div", "tl-label", name), row = track(name);
  lab.title = (roles || []).join(" ⇄ ");
  $("tl-labels").appendChild(lab); $("tl-rows").appendChild(row);
  labels[li] = lab; laneRows[li] = row;
  const tr = el("tr");
  for (let k = 0; k < 7; k++) tr.appendChild(el("td", k >= 5 ? "num" : ""));
  tr.firstChild.textContent = name;
  $("lanes").tBodies[0].appendChild(tr); rows[li] = tr;
}
// addLane() appends to `lanes` as it builds each lane's DOM: start it from empty.
lanes.splice(0).forEach((l) => addLane(l.name, l.roles));
S0.ln = lanes.map(() => LANE0); S0.pub = lanes.map(() => 0);
S0.cur = lanes.map(() => lanes.map(() => 0));

function planningRow() {
  if (planRow) return planRow;
  const lab = el("div", "tl-label", "planning"), row = track("planning");
  $("tl-labels").prepend(lab); $("tl-rows").prepend(row);
  planRow = row;
  return row;
}

function block(b) {
  const e = svgEl("rect", {y: 3, height: 20, rx: 3, "data-i": B.length});
  b.tip = document.createElementNS(SVG, "title");
  e.appendChild(b.tip);
  b.el = e; b.label = null; B.push(b);
  (b.l < 0 ? planningRow() : laneRows[b.l]).firstChild.appendChild(e);
  dress(b);
  return B.length - 1;
}
function dress(b) {
  b.el.setAttribute("class", "blk s-" + b.st + (b.rs ? " r-" + b.rs : ""));
  b.tip.textContent = b.a + (b.l < 0 ? " · planning" : " · turn " + b.n) + " · "
    + (b.rs || b.st) + (b.t1 === null ? "" : " · " + (+b.du).toFixed(1) + " s · " + money(b.c));
}

function fold(p) {
  const i = P.length, d = p.d || {}, prev = i ? S[i - 1] : S0;
  const s = {ln: prev.ln, pub: prev.pub, cur: prev.cur, sp: prev.sp, spT: prev.spT,
    lim: prev.lim, bd: prev.bd, st: prev.st};
  if (d.N) {
    addLane(d.N[0], d.N[1]);
    s.ln = s.ln.concat([LANE0]); s.pub = s.pub.concat([0]);
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
    dress(b); open[p.l] = null; PB[i] = k;
  }
  if (d.pa) {
    PB[i] = block({l: -1, a: p.a, n: 0, t0: Math.max(0, p.t - d.pa[1] * 1000), t1: p.t, i0: i,
      i1: i, st: d.pa[0] === "valid" ? "valid" : "failed", rs: "plan", c: d.pa[2], du: d.pa[1]});
  }
  P.push(p); S.push(s);
}

const span = () => Math.max(1, P.length ? P[P.length - 1].t : 1);
function layout() {
  const w = span(), end = P.length ? P[P.length - 1].t : 0;
  const px = $("tl-rows").clientWidth || 1000, tops = new Map();
  // Read every track's offset before writing anything, so the loop forces no layout.
  for (const row of $("tl-rows").children) tops.set(row, row.offsetTop);
  for (const b of B) {
    b.top = tops.get(b.el.parentNode.parentNode) || 0;
    const a = Math.max(0, b.t0), z = b.t1 === null ? end : b.t1, f = Math.max(0, z - a) / w;
    b.x = (100 * a / w) + "%"; b.w = (100 * f) + "%";
    b.el.setAttribute("x", b.x); b.el.setAttribute("width", b.w);
    // A label only where it fits: "a 12" needs about 30 px.
    const fits = f * px >= 30;
    if (fits && !b.label) {
      b.label = svgEl("text", {"class": "bl", y: 17});
      b.label.textContent = b.l < 0 ? "plan" : short(b.a) + " " + b.n;
      b.el.parentNode.appendChild(b.label);
    }
    if (b.label) {
      b.label.setAttribute("x", b.x); b.label.setAttribute("dx", 4);
      b.label.style.display = fits ? "" : "none";
    }
  }
  hi = undefined;  // blocks moved: place the current-turn frame again
  chart();
}

let chartPh = null;
function chart() {
  const svg = $("chart"), w = span(), cost = [], best = [];
  let c0 = null, b0 = null;
  for (let i = 0; i < P.length; i++) {
    const s = S[i], x = 1000 * P[i].t / w;
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
    const y = (v) => hi2 === lo ? 80 : 150 - 140 * (v - lo) / (hi2 - lo);
    svg.appendChild(svgEl("polyline", {"class": cls, fill: "none", stroke: colour,
      "stroke-width": "2", "vector-effect": "non-scaling-stroke",
      points: keep.map((q) => q[0].toFixed(1) + "," + y(q[1]).toFixed(1)).join(" ")}));
  };
  line(cost, "cost", "#1c7ed6");
  line(best, "best", "#2f9e44");
  chartPh = svgEl("line", {x1: 0, x2: 0, y1: 0, y2: 160, stroke: "#d9480f",
    "stroke-width": "2", "vector-effect": "non-scaling-stroke"});
  svg.appendChild(chartPh);
  // Each line has its own scale, from its lowest to its highest value: say which.
  const lg = $("legend"), last = S.length ? S[S.length - 1] : S0, bb = last.bd && last.bd.b;
  lg.replaceChildren(el("span", "k-cost", "■ cumulative cost, $0 → " + money(last.sp[0])));
  lg.appendChild(el("span", "k-best", bb ? "  ■ best " + bb[4] + " (" + bb[5] + "), "
    + best[0][1] + " → " + bb[0] : "  ■ best: no ranked submission"));
}

function go(i, ts) {
  cur = Math.max(0, Math.min(P.length - 1, i | 0));
  if (ts) lastTs = ts;
  if (!queued) { queued = true; requestAnimationFrame(render); }
}

// Writes only what differs: an unchanged cell costs no layout.
function cell(tr, k, text, cls, title) {
  const td = tr.cells[k], t = text === null || text === undefined ? "" : String(text);
  if (td.textContent !== t) td.textContent = t;
  if (cls !== undefined && td.className !== cls) td.className = cls;
  if (td.title !== (title || "")) td.title = title || "";
}

function render() {
  queued = false;
  const n = P.length, bar = $("bar");
  if (!n) { $("pos").textContent = "no events yet"; return; }
  const i = cur, p = P[i], s = S[i], w = span();
  bar.max = String(n - 1); bar.value = String(i);
  $("pos").textContent = (i + 1) + " / " + n + " · " + clock(p.t) + " (" + rel(p.t) + ")";
  $("now-n").textContent = "#" + (i + 1); $("now-x").textContent = p.x;
  const x = 100 * p.t / w;
  // Moved by transform on their own layers: the thousands of turn blocks under them are
  // not repainted while the bar is dragged.
  $("tl-ph").style.transform = $("tl-fut").style.transform = "translateX(" + x + "%)";
  if (chartPh) { chartPh.setAttribute("x1", 10 * x); chartPh.setAttribute("x2", 10 * x); }
  // The current turn is framed by one overlay of its own, not by restyling its block:
  // a class change on one of thousands of blocks would repaint them all.
  const hb = PB[i] >= 0 ? B[PB[i]] : null, frame = $("tl-hi");
  if (hb !== hi) {
    hi = hb;
    frame.hidden = !hb;
    if (hb) {
      frame.style.top = (hb.top || 0) + "px";
      frame.style.left = hb.x;
      frame.style.width = hb.w;
      frame.title = hb.tip.textContent;
    }
  }
  $("status").textContent = s.st;
  lanes.forEach((l, li) => {
    const r = s.ln[li] || LANE0, tr = rows[li];
    const state = r[0] ? "on turn" : r[9] ? "held" : r[11] ? "paused" : "idle";
    const why = r[9] ? r[10] : r[11] ? "until " + r[11] : "";
    cell(tr, 1, state, "st-" + state.split(" ").pop(), why);
    cell(tr, 2, r[0] ? r[0] + " · turn " + r[1] + (r[2] > 1 ? " (attempt " + r[2] + ")" : "") : "",
      undefined, r[13] || "");
    cell(tr, 3, r[0] && r[3] !== null ? dur((p.t - r[3]) / 1000) : "");
    cell(tr, 4, r[8] ? r[8] + (r[12] ? " · " + short(r[12]) : "") : "—");
    cell(tr, 5, r[4], "num", r[5] + " valid, " + r[6] + " failed");
    cell(tr, 6, r[7], "num");
    labels[li].className = "tl-label" + (p.l === li ? " cur" : "");
  });
  // States share unchanged parts, so identity says whether a panel needs redrawing.
  if (s.pub !== shown.pub || s.cur !== shown.cur) {
    pending(s); shown.pub = s.pub; shown.cur = s.cur;
  }
  if (s.bd !== shown.bd) { board(s); shown.bd = s.bd; }
  spend(s, p);
  story();
}

function pending(s) {
  const box = $("pending");
  box.replaceChildren();
  if (!run.shares) {
    box.appendChild(el("div", "none", "This flow does not pass reports between lanes."));
    return;
  }
  lanes.forEach((l, c) => {
    const ids = [];
    lanes.forEach((_, src) => {
      if (src === c) return;
      const from = (s.cur[c] || [])[src] || 0, to = s.pub[src] || 0;
      for (let k = from; k < to; k++) ids.push(R[src][k]);
    });
    const line = el("div");
    line.dataset.lane = l.name;
    line.appendChild(el("b", "", l.name + " ← " + ids.length + " "));
    const shown = ids.slice(0, 6).map((id) => id + (RA[id] ? " (" + RA[id] + " artifact"
      + (RA[id] > 1 ? "s" : "") + ")" : ""));
    line.appendChild(el("span", "ids", shown.join(", ") + (ids.length > 6 ? ", +"
      + (ids.length - 6) + " more" : "")));
    box.appendChild(line);
  });
}

function board(s) {
  const box = $("board"), bd = s.bd;
  box.replaceChildren();
  if (!bd || !bd.n) { box.appendChild(el("div", "none", "No submissions yet.")); return; }
  const b = bd.b;
  box.appendChild(el("div", "best", b ? "Best " + b[4] + " = " + b[0] + " (" + b[5] + ") from "
    + b[1] + ", " + b[2] + (b[3] ? ", verified" : ", unverified") : "No ranked submission yet."));
  const t = el("table"), h = el("tr");
  ["#", "value", "lane", "report"].forEach((c) => h.appendChild(el("th", "", c)));
  t.appendChild(h);
  (bd.t || []).forEach((e, k) => {
    const tr = el("tr");
    [k + 1, e[0], e[1], e[2]].forEach((v) => tr.appendChild(el("td", "", v)));
    t.appendChild(tr);
  });
  box.appendChild(t);
  box.appendChild(el("div", "none", bd.n + " submission" + (bd.n === 1 ? "" : "s") + " so far"));
}

function spend(s, p) {
  const tb = $("spend").tBodies[0], sp = s.sp;
  const active = sp[3] + (sp[4] ? Math.max(0, p.t - s.spT) / 1000 : 0);
  const items = [["duration", active, dur], ["cost", sp[0], money], ["turns", sp[1], num],
    ["output tokens", sp[2], num]];
  tb.replaceChildren();
  items.forEach(([name, used, f], k) => {
    const lim = s.lim[k], tr = el("tr");
    tr.appendChild(el("th", "", name));
    tr.appendChild(el("td", "num", f(used)));
    tr.appendChild(el("td", "num", lim === null ? "no limit" : "of " + f(lim)));
    tr.appendChild(el("td", "num", lim === null ? "" : f(Math.max(0, lim - used)) + " left"));
    tb.appendChild(tr);
  });
}

const pool = [];
let storyQueued = false;
function story() {
  const box = $("story"), h = box.clientHeight || 360;
  $("story-in").style.height = (P.length * ROW) + "px";
  $("story-n").textContent = "(" + P.length + " points)";
  if (cur * ROW < box.scrollTop || cur * ROW > box.scrollTop + h - ROW) {
    box.scrollTop = Math.max(0, cur * ROW - h / 2);
  }
  storyRows();
}
function storyRows() {
  storyQueued = false;
  const box = $("story"), inner = $("story-in"), h = box.clientHeight || 360;
  const first = Math.max(0, Math.floor(box.scrollTop / ROW) - 4);
  const last = Math.min(P.length, Math.ceil((box.scrollTop + h) / ROW) + 4);
  while (pool.length < last - first) {
    const r = el("div", "row");
    r.append(el("b"), el("i"), el("span"));
    r.dataset.i = "-1"; inner.appendChild(r); pool.push(r);
  }
  pool.forEach((r, k) => {
    const idx = first + k;
    if (idx >= last) { r.hidden = true; return; }
    r.hidden = false;
    if (r.dataset.i !== String(idx)) {
      const p = P[idx];
      r.dataset.i = String(idx);
      r.style.top = (idx * ROW) + "px";
      r.children[0].textContent = "#" + (idx + 1);
      r.children[1].textContent = rel(p.t);
      r.children[2].textContent = p.x;
      r.title = p.x;
    }
    r.className = "row g-" + P[idx].g + (idx === cur ? " cur" : "");
  });
}

function play(on) {
  if (on && !timer) {
    if (cur >= P.length - 1) go(0);
    timer = setInterval(() => {
      if (cur >= P.length - 1) { if (!live) play(false); return; }
      go(cur + Math.max(1, Math.ceil(P.length / 600)));
    }, 100);
  } else if (!on && timer) {
    clearInterval(timer); timer = null;
  }
  $("play").textContent = timer ? "Pause" : "Play";
}

function header() {
  $("flow").textContent = run.flow || "run";
  $("rid").textContent = run.id || "";
  const m = $("meta");
  m.replaceChildren();
  m.appendChild(el("span", "", (run.workspace || "") + " · created " + (run.created || "")
    + (run.evaluator ? " · metric " + run.metric + " (" + run.direction + ") measured by `"
      + run.evaluator + "`" : "") + " · "));
  const det = el("details"), sum = el("summary", "", "objective");
  det.append(sum, el("div", "", run.objective || ""));
  m.appendChild(det);
}

$("prev").addEventListener("click", () => { play(false); go(cur - 1); });
$("next").addEventListener("click", () => { play(false); go(cur + 1); });
$("play").addEventListener("click", () => play(!timer));
$("bar").addEventListener("input", (e) => go(+e.target.value, e.timeStamp));
$("tl-rows").addEventListener("click", (e) => {
  const t = e.target.closest(".blk");
  if (t) { const b = B[+t.dataset.i]; go(b.i1 >= 0 ? b.i1 : b.i0); }
});
$("story-in").addEventListener("click", (e) => {
  const r = e.target.closest(".row");
  if (r) { play(false); go(+r.dataset.i); }
});
$("story").addEventListener("scroll", () => {
  if (!storyQueued) { storyQueued = true; requestAnimationFrame(storyRows); }
});
document.addEventListener("keydown", (e) => {
  if (e.target === $("bar") || e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.key === "ArrowLeft") { play(false); go(cur - 1); }
  else if (e.key === "ArrowRight") { play(false); go(cur + 1); }
  else if (e.key === " ") { e.preventDefault(); play(!timer); }
  else if (e.key === "Home") go(0);
  else if (e.key === "End") go(P.length - 1);
  else return;
});

let resized = 0;
window.addEventListener("resize", () => {
  clearTimeout(resized);
  resized = setTimeout(() => { layout(); go(cur); }, 150);
});

header();
for (const p of doc.points || []) fold(p);
layout();
cur = P.length - 1;
render();
window.fcReplay = {go: (i) => go(i), cur: () => cur, count: () => P.length, lastTs: () => lastTs};
if (live) {
  $("livebadge").hidden = false;
  let relaid = 0;
  const es = new EventSource(live);
  es.addEventListener("points", (e) => {
    const atEnd = cur >= P.length - 1;
    for (const p of JSON.parse(e.data)) fold(p);
    const now = Date.now();
    if (now - relaid > 400) { relaid = now; layout(); } else setTimeout(layout, 450);
    if (atEnd) cur = P.length - 1;
    go(cur);
  });
  es.onerror = () => { $("livebadge").textContent = "reconnecting"; };
  es.onopen = () => { $("livebadge").textContent = "live"; };
}
})();
"""
