"""The replay page's markup skeleton, CSS and JS: hand-written, inline, no library.

Kept as Python strings so they ship inside the package without package-data rules, and so
`replay.render_html` can pin them by hash in the page's Content-Security-Policy. The script
only ever puts run data into the page with `textContent` (agents write the summaries it
shows); it folds the embedded points once, incrementally, into per-point states that share
unchanged parts, and renders only the current point. The narration list is virtual: fixed
row height, only the rows in view exist. The script is written in two halves, one module
each (`replay_timeline`: data, tracks, time scale, chart; `replay_panels`: what a point
shows, controls, live stream), joined here into one function.
"""

from __future__ import annotations

from flamechase.view.replay_pack import JS_UNPACK
from flamechase.view.replay_panels import JS_PANELS
from flamechase.view.replay_timeline import JS_TIMELINE

__all__ = ["CSS", "JS", "SKELETON"]

SKELETON = """\
<header id="hd"><h1><span id="flow"></span> <small id="rid"></small>
<span id="status" class="badge"></span><span id="livebadge" class="badge live" hidden>live</span>
</h1><div id="meta"></div><p id="objective" aria-label="objective"></p></header>
<nav id="controls">
<button id="first" type="button" title="first point (Home)">|◀ First</button>
<button id="prev" type="button" title="previous point (←)">◀ Prev</button>
<button id="play" type="button" title="play / pause (space)">Play</button>
<button id="next" type="button" title="next point (→)">Next ▶</button>
<button id="last" type="button" title="last point (End)">Last ▶|</button>
<input id="bar" type="range" min="0" max="0" value="0" step="1" aria-label="point in the run">
<span id="pos"></span>
</nav>
<p id="now"><b id="now-n"></b> <span id="now-x"></span></p>
<section id="timeline" aria-label="timeline: one track per lane, one block per turn">
<div id="tl-labels"></div><div id="tl-area"><div id="tl-rows"></div>
<div id="tl-brk"></div><div id="tl-fut"></div><div id="tl-hi" hidden></div><div id="tl-ph"></div>
</div></section>
<div id="tl-key" aria-label="what the timeline's colours mean">
<span><i class="sw r-progress"></i>progress</span>
<span><i class="sw r-deliverable_ready"></i>deliverable ready</span>
<span><i class="sw r-no_result"></i>no result</span>
<span><i class="sw r-blocked"></i>blocked</span>
<span><i class="sw s-failed"></i>failed</span>
<span><i class="sw s-interrupted"></i>cut</span>
<span><i class="sw s-limited"></i>usage limit</span>
<span><i class="sw s-open"></i>under way</span>
<span><i class="sw s-valid"></i>valid (a result other than a report)</span>
<span><i class="sw brk-sw"></i>run stopped or idle (not to scale)</span></div>
<section id="lanes-box"><h2>Lanes</h2><table id="lanes"><thead><tr><th>Lane</th>
<th>State</th><th>On turn</th><th>Elapsed</th><th>Last report</th><th>Turns</th>
<th
title="every failed turn; in a row: the latest ones, two of which hold a lane">
Failed turns (in a row)</th></tr></thead><tbody></tbody></table></section>
<section id="alerts" hidden><h2>Alerts</h2><div id="alerts-in"></div></section>
<div id="panels" hidden aria-label="the flow's panels"></div>
<div id="grid">
<section><h2>Pending reports</h2><div id="pending"></div></section>
<section><h2>Leaderboard</h2><div id="board"></div></section>
<section><h2>Spend</h2><table id="spend"><tbody></tbody></table></section>
</div>
<section id="chart-box"><h2>Spend and best over time</h2><div id="legend"></div>
<svg id="chart" viewBox="0 0 1000 160" preserveAspectRatio="none" role="img"
 aria-label="cumulative spend and leaderboard best"></svg><div id="chart-ax"></div></section>
<section><h2>Narration <small id="story-n"></small></h2>
<div id="story" tabindex="0"><div id="story-in"></div></div></section>"""

CSS = """
:root{--fg:#1d232b;--mut:#6b7480;--bd:#dde2e8;--bg:#fff;--pan:#f6f8fa;--acc:#d9480f;
--c-done:#868e96;--c-progress:#2f9e44;--c-deliverable:#1c7ed6;--c-blocked:#e8590c;
--c-failed:#e03131;--c-cut:#9c36b5;--c-limited:#f59f00;--c-open:#fab005;--c-plan:#0c8599;
--brk:repeating-linear-gradient(135deg,#e9ecef 0 4px,#fff 4px 8px)}
*{box-sizing:border-box}
body{margin:0;padding:12px 18px;font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;
color:var(--fg);background:var(--bg)}
h1{font-size:18px;margin:0 0 4px}h1 small{color:var(--mut);font-weight:normal;font-size:12px}
h2{font-size:13px;margin:0 0 6px;text-transform:uppercase;letter-spacing:.04em;color:var(--mut)}
.badge{display:inline-block;margin-left:8px;padding:1px 7px;border-radius:9px;font-size:11px;
background:#e7ecf1;vertical-align:middle}
.badge.live{background:#d3f9d8;color:#2b8a3e}
#meta{color:var(--mut);font-size:12px}
#objective{margin:6px 0 0;white-space:pre-wrap;max-height:6.2em;overflow:auto;
border-left:3px solid var(--bd);padding:2px 8px;font-size:13px}
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
.blk{fill:var(--c-done);stroke:rgba(0,0,0,.2);stroke-width:1;cursor:pointer}
.blk.s-valid{fill:var(--c-plan)}
.blk.r-progress{fill:var(--c-progress)}.blk.r-deliverable_ready{fill:var(--c-deliverable)}
.blk.r-no_result{fill:var(--c-done)}.blk.r-blocked{fill:var(--c-blocked)}
.blk.s-failed{fill:var(--c-failed)}.blk.s-interrupted{fill:var(--c-cut)}
.blk.s-limited{fill:var(--c-limited)}.blk.s-open{fill:var(--c-open)}
.mk{stroke:#fff;stroke-width:1.5;cursor:pointer}.mk-info{fill:#7048e8}.mk-good{fill:#2b8a3e}
.mk-bad{fill:#c92a2a}.sw.mk-sw{border-radius:50%}.sw.mk-info{background:#7048e8}
.sw.mk-good{background:#2b8a3e}.sw.mk-bad{background:#c92a2a}
#tl-key{display:flex;flex-wrap:wrap;gap:4px 14px;margin:6px 2px 0;font-size:12px;
color:var(--mut)}
.sw{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:5px;
vertical-align:-2px;background:var(--c-done);border:1px solid rgba(0,0,0,.2)}
.sw.r-progress{background:var(--c-progress)}.sw.r-deliverable_ready{background:var(--c-deliverable)}
.sw.r-blocked{background:var(--c-blocked)}.sw.s-failed{background:var(--c-failed)}
.sw.s-interrupted{background:var(--c-cut)}.sw.s-limited{background:var(--c-limited)}
.sw.s-open{background:var(--c-open)}.sw.s-valid{background:var(--c-plan)}
.sw.brk-sw{background:var(--brk)}
#tl-brk{position:absolute;top:0;bottom:0;left:0;right:0;pointer-events:none;z-index:2}
.brk{position:absolute;top:0;bottom:0;background:var(--brk);border-left:2px solid #adb5bd;
border-right:2px solid #adb5bd;pointer-events:auto}
.brk span{position:absolute;top:0;left:50%;transform:translateX(-50%);font-size:10px;
line-height:14px;color:var(--mut);white-space:nowrap;background:var(--pan);padding:0 3px;
border-radius:3px}
#timeline.brks #tl-labels,#timeline.brks #tl-area{padding-top:15px}
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
.why{font-size:12px;color:#c92a2a;white-space:normal;max-width:46em}
.why.w-paused{color:#b76e00}.why.w-failed{color:#a61e4d}
#pending div,#board div{margin:2px 0}.ids{color:var(--mut);font-size:12px}
.none{color:var(--mut)}
#chart{width:100%;height:160px;display:block;background:var(--pan);border-radius:4px}
#legend{font-size:12px;color:var(--mut);margin-bottom:4px}
#chart-box{position:relative}#chart-ax span{position:absolute;font-size:10px;line-height:12px;
padding:0 2px;background:rgba(255,255,255,.8);pointer-events:none}
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
.tl-label.solo,#lanes tr.solo td:first-child{font-style:italic;color:var(--c-plan)}
#panels{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:14px;
margin:14px 0}
.panel{border:1px solid var(--bd);border-radius:6px;padding:8px 10px;contain:content;
overflow:auto;max-height:480px}
.panel th{white-space:nowrap}
#alerts{border:1px solid #ffc9c9;background:#fff5f5;border-radius:6px;padding:8px 10px;
margin-top:14px}
.alert{color:#c92a2a;cursor:pointer;margin:2px 0}
"""


# One function around both halves: they share its scope, as one script. It is async: the
# document is unpacked (gunzipped by the browser) before anything is drawn; a browser that
# cannot says so where the position would be.
JS = (
    '\n(async () => {\n"use strict";\n'
    + JS_UNPACK
    + JS_TIMELINE
    + JS_PANELS
    + '})().catch((e) => {\n  document.getElementById("pos").textContent = "cannot read this'
    + ' replay: " + e;\n});\n'
)
