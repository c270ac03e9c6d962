"""The replay script's second half: the point on screen, the panels, the controls.

Renders the current point (`render`: status, lanes with each state's reason, pending
reports, leaderboard, spend), keeps the narration list virtual, and wires the controls (first,
previous, play, next, last; keys ←, →, space, Home, End; the bar; clicks on blocks and rows)
and the live stream. It uses what `replay_timeline` defines: `assets.JS` joins the two.
"""

from __future__ import annotations

__all__ = ["JS_PANELS"]

JS_PANELS = r"""
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

// A lane's state, and under it why: the hold's reason, the pause's end, or the error of the
// last turn when it failed (the table says it, not only a tooltip).
function stateCell(td, r) {
  const state = r[0] ? "on turn" : r[9] ? "held" : r[11] ? "paused" : "idle";
  const why = r[9] ? r[10] || "no reason recorded" : r[11] ? "until " + r[11]
    : r[7] && r[14] ? "last turn failed: " + r[14] : "";
  const key = state + "\u0000" + why;
  if (td.dataset.k === key) return;
  td.dataset.k = key;
  const word = el("span", "st-" + state.split(" ").pop(), state);
  td.replaceChildren(word);
  if (why) {
    td.appendChild(el("div", "why w-" + (r[9] ? "held" : r[11] ? "paused" : "failed"), why));
  }
}

function render() {
  queued = false;
  const n = P.length, bar = $("bar");
  if (!n) { $("pos").textContent = "no events yet"; return; }
  const i = cur, p = P[i], s = S[i];
  bar.max = String(n - 1); bar.value = String(i);
  $("pos").textContent = (i + 1) + " / " + n + " · " + clock(p.t) + " (" + rel(p.t) + ")";
  $("now-n").textContent = "#" + (i + 1); $("now-x").textContent = p.x;
  const x = X(p.t);
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
      frame.title = tipText(hb);
    }
  }
  $("status").textContent = s.st;
  lanes.forEach((l, li) => {
    const r = s.ln[li] || LANE0, tr = rows[li];
    stateCell(tr.cells[1], r);
    cell(tr, 2, r[0] ? r[0] + " · turn " + r[1] + (r[2] > 1 ? " (attempt " + r[2] + ")" : "") : "",
      undefined, r[13] || "");
    cell(tr, 3, r[0] && r[3] !== null ? dur((p.t - r[3]) / 1000) : "");
    cell(tr, 4, r[8] ? r[8] + (r[12] ? " · " + short(r[12], li) : "") : "—");
    cell(tr, 5, r[4], "num", r[5] + " valid, " + r[6] + " failed");
    // Every failed turn, and how many of the last ones failed in a row (two hold a lane).
    cell(tr, 6, r[6] + (r[7] ? " (" + r[7] + " in a row)" : ""), "num",
      r[6] + " failed turn(s) in all; " + r[7] + " in a row now");
    labels[li].className = "tl-label" + (p.l === li ? " cur" : "");
  });
  // States share unchanged parts, so identity says whether a panel needs redrawing.
  if (s.pub !== shown.pub || s.cur !== shown.cur || s.rd !== shown.rd) {
    pending(s); shown.pub = s.pub; shown.cur = s.cur; shown.rd = s.rd;
  }
  if (s.bd !== shown.bd) { board(s); shown.bd = s.bd; }
  if (s.pv !== shown.pv) { panels(i); shown.pv = s.pv; }
  if (s.al !== shown.al) { alerts(s); shown.al = s.al; }
  spend(s, p);
  story();
}

// The flow's panels at point i: each row as it stood then, at most PANEL_ROWS of them (those
// that changed last) in the panel's own order; a panel not yet named is not shown.
const PANEL_ROWS = 40;
function panels(i) {
  const box = $("panels");
  box.replaceChildren();
  for (const pn of PN) {
    const rows = [];
    for (const key of pn.keys) {
      const h = pn.at[key];
      if (h[0][0] > i) break;  // keys are kept in the order they were first given
      let lo = 0, up = h.length - 1;
      while (lo < up) {
        const mid = (lo + up + 1) >> 1;
        if (h[mid][0] <= i) lo = mid; else up = mid - 1;
      }
      rows.push([key, h[lo][0], h[lo][1]]);
    }
    if (!rows.length) continue;
    const cols = pn.cols.filter((c) => pn.colAt[c] <= i);
    let keep = rows;
    if (rows.length > PANEL_ROWS) {
      const last = rows.map((r) => r[1]).sort((a, b) => b - a)[PANEL_ROWS - 1];
      keep = rows.filter((r) => r[1] >= last).slice(-PANEL_ROWS);
    }
    const sec = el("section", "panel");
    sec.dataset.panel = pn.name;
    sec.appendChild(el("h2", "", pn.name));
    const t = el("table"), h = el("tr");
    h.appendChild(el("th", "", ""));
    cols.forEach((c) => h.appendChild(el("th", "", c)));
    t.appendChild(h);
    for (const [key, , cells] of keep) {
      const tr = el("tr");
      tr.dataset.key = key;
      tr.appendChild(el("th", "", key));
      cols.forEach((c) => tr.appendChild(el("td", "", cellText(cells[c]))));
      t.appendChild(tr);
    }
    sec.appendChild(t);
    if (keep.length < rows.length) {
      sec.appendChild(el("div", "none", "the " + keep.length + " of " + rows.length
        + " rows that changed last"));
    }
    box.appendChild(sec);
  }
  box.hidden = !box.children.length;
}
const cellText = (v) => v === null || v === undefined ? "—" : v === true ? "yes"
  : v === false ? "no" : String(v);

// Alerts (anomalies a flow raised) up to the point, the last ALERTS of them.
const ALERTS = 20;
function alerts(s) {
  const box = $("alerts"), list = $("alerts-in");
  box.hidden = !AL.length;
  list.replaceChildren();
  if (!s.al) { list.appendChild(el("div", "none", "No alerts yet.")); return; }
  for (const [k, text] of AL.slice(Math.max(0, s.al - ALERTS), s.al)) {
    const a = el("div", "alert", text);
    a.dataset.p = String(k);
    list.appendChild(a);
  }
  if (s.al > ALERTS) list.appendChild(el("div", "none", "+" + (s.al - ALERTS) + " earlier"));
}

function pending(s) {
  const box = $("pending");
  box.replaceChildren();
  if (!run.shares) {
    box.appendChild(el("div", "none", "This flow does not pass reports between lanes."));
    return;
  }
  lanes.forEach((l, c) => {
    // What a lane reads is what its turns said; journals that never say: every other lane.
    const reads = s.rd[c] || (run.legacy ? null : []);
    if (l.solo || (reads && !reads.length)) return;
    const ids = [];
    lanes.forEach((_, src) => {
      if (src === c || (reads && !reads.includes(src)) || lanes[src].solo) return;
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
  if (!box.children.length) box.appendChild(el("div", "none", "No reports pending."));
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

// The list's scroll offset is kept here (set with it, or read when the user scrolls): reading
// scrollTop after a change makes the browser lay the whole page out first.
const pool = [];
let storyQueued = false, storyTop = 0;
function story() {
  const h = storyH;
  $("story-in").style.height = (P.length * ROW) + "px";
  $("story-n").textContent = "(" + P.length + " points)";
  if (cur * ROW < storyTop || cur * ROW > storyTop + h - ROW) {
    storyTop = Math.max(0, Math.min(cur * ROW - h / 2, P.length * ROW - h));
    $("story").scrollTop = storyTop;
  }
  storyRows();
}
function storyRows() {
  storyQueued = false;
  const inner = $("story-in"), h = storyH;
  const first = Math.max(0, Math.floor(storyTop / ROW) - 4);
  const last = Math.min(P.length, Math.ceil((storyTop + h) / ROW) + 4);
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
      + run.evaluator + "`" : "")));
  $("objective").textContent = run.objective || "(no objective recorded)";
}

$("first").addEventListener("click", () => { play(false); go(0); });
$("last").addEventListener("click", () => { play(false); go(P.length - 1); });
$("prev").addEventListener("click", () => { play(false); go(cur - 1); });
$("next").addEventListener("click", () => { play(false); go(cur + 1); });
$("play").addEventListener("click", () => play(!timer));
$("bar").addEventListener("input", (e) => go(+e.target.value, e.timeStamp));
$("tl-rows").addEventListener("mouseover", (e) => {
  const t = e.target.closest(".blk");
  if (t) tipped(t);
});
$("tl-rows").addEventListener("click", (e) => {
  const t = e.target.closest(".blk");
  if (t) { const b = B[+t.dataset.i]; go(b.i1 >= 0 ? b.i1 : b.i0); }
  const m = e.target.closest(".mk");
  if (m) { play(false); go(+m.dataset.p); }
});
$("alerts-in").addEventListener("click", (e) => {
  const a = e.target.closest(".alert");
  if (a) { play(false); go(+a.dataset.p); }
});
$("story-in").addEventListener("click", (e) => {
  const r = e.target.closest(".row");
  if (r) { play(false); go(+r.dataset.i); }
});
$("story").addEventListener("scroll", () => {
  storyTop = $("story").scrollTop;
  if (!storyQueued) { storyQueued = true; requestAnimationFrame(storyRows); }
});
document.addEventListener("keydown", (e) => {
  if (e.target === $("bar") || e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.key === "ArrowLeft") { play(false); go(cur - 1); }
  else if (e.key === "ArrowRight") { play(false); go(cur + 1); }
  else if (e.key === " ") { e.preventDefault(); play(!timer); }
  else if (e.key === "Home") { e.preventDefault(); play(false); go(0); }
  else if (e.key === "End") { e.preventDefault(); play(false); go(P.length - 1); }
  else return;
});

let resized = 0;
window.addEventListener("resize", () => {
  clearTimeout(resized);
  resized = setTimeout(() => { measure(); layout(); go(cur); }, 150);
});

header();
measure();
for (const p of doc.points || []) fold(p);
layout();
cur = P.length - 1;
render();
// points(): what the page read, for tests to hold against the document it was given.
window.fcReplay = {go: (i) => go(i), cur: () => cur, count: () => P.length, lastTs: () => lastTs,
  points: () => P};
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
"""
