"""`flamechase serve`: a local page listing runs and replaying them live.

Starlette on uvicorn, bound to 127.0.0.1 only. Every request must carry the random token
printed at start (`?token=...`); anything else gets 403, so another local user or a web page
in the browser cannot read run data by guessing the port. Host headers other than
127.0.0.1/localhost are refused too (DNS rebinding).

A run page is the same self-contained replay `show --html` writes, plus a server-sent-event
stream: the server polls the run database read-only (WAL: readers never block the engine,
the single writer) every `poll` seconds and sends new points built by the same
`ReplayBuilder`, with the event seq as the SSE id so a reconnect resumes where it left.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import json
import secrets
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from flamechase.errors import StoreError
from flamechase.store.catalog import list_runs, run_dirs
from flamechase.store.db import DB_NAME
from flamechase.store.reader import Reader
from flamechase.view.replay import ReplayBuilder, load_run, render_html

__all__ = ["create_app", "new_token", "serve"]

LOOPBACK = "127.0.0.1"
POLL_SECONDS = 0.3
KEEPALIVE_SECONDS = 15.0
_BATCH = 2000


def new_token() -> str:
    return secrets.token_urlsafe(24)


class TokenGuard:
    """Refuse (403) every request whose `token` query parameter is not the server's."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0].encode()
            if not secrets.compare_digest(given, self.token):
                response = PlainTextResponse(
                    "403: this page needs the token in the URL `flamechase serve` printed\n",
                    status_code=403,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


_INDEX_JS = """
(() => {
const q = new URLSearchParams(location.search).get("token") || "";
const body = document.getElementById("runs");
function row(r) {
  const tr = document.createElement("tr");
  const a = document.createElement("a");
  a.href = "/run/" + encodeURIComponent(r.id) + "?token=" + encodeURIComponent(q);
  a.textContent = r.id;
  const cells = [a, r.task_line || "", r.flow, r.status, r.created, r.turns,
    "$" + (+r.cost_usd).toFixed(4), r.workspace];
  for (const c of cells) {
    const td = document.createElement("td");
    if (c instanceof Node) td.appendChild(c); else td.textContent = String(c);
    if (tr.cells.length === 1) td.className = "task";
    tr.appendChild(td);
  }
  return tr;
}
async function refresh() {
  try {
    const res = await fetch("/api/runs?token=" + encodeURIComponent(q));
    if (res.ok) body.replaceChildren(...(await res.json()).reverse().map(row));
  } catch (e) { /* the server stopped; keep what is shown */ }
}
setInterval(refresh, 3000);
})();
"""

_INDEX_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:18px;color:#1d232b}
table{border-collapse:collapse}th,td{padding:3px 10px;border-bottom:1px solid #e3e7ec;
text-align:left;vertical-align:top}th{color:#6b7480;font-weight:600}small{color:#6b7480}
td.task{max-width:36em}
"""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _index_html(runs: list[dict[str, Any]], token: str) -> str:
    rows = []
    for r in reversed(runs):
        href = f"/run/{quote(str(r['id']))}?token={quote(token)}"
        cells = [f'<a href="{html.escape(href)}">{html.escape(str(r["id"]))}</a>'] + [
            html.escape(str(v))
            for v in (
                r.get("task_line", ""),
                r["flow"],
                r["status"],
                r["created"],
                r["turns"],
                f"${float(r['cost_usd']):.4f}",
                r["workspace"],
            )
        ]
        tds = [
            f'<td class="task">{c}</td>' if i == 1 else f"<td>{c}</td>" for i, c in enumerate(cells)
        ]
        rows.append("<tr>" + "".join(tds) + "</tr>")
    csp = (
        f"default-src 'none'; script-src {_hash(_INDEX_JS)}; style-src {_hash(_INDEX_CSS)}; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'"
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="referrer" content="no-referrer"><title>flamechase runs</title>'
        f"<style>{_INDEX_CSS}</style></head><body><h1>flamechase runs</h1>"
        "<p><small>newest first; the list refreshes itself; a run page follows the run live"
        "</small></p><table><thead><tr><th>run</th><th>task</th><th>flow</th><th>status</th>"
        "<th>created</th><th>turns</th><th>cost</th><th>workspace</th></tr></thead>"
        f'<tbody id="runs">{"".join(rows)}</tbody></table>'
        f"<script>{_INDEX_JS}</script></body></html>"
    )


def _find_run(run_id: str) -> Path | None:
    """The run directory named exactly `run_id` (never a prefix, never a path)."""
    return next((d for d in run_dirs() if d.name == run_id), None)


def create_app(
    token: str, *, poll: float = POLL_SECONDS, stopping: Callable[[], bool] = lambda: False
) -> Starlette:
    """The app; `stopping()` turns True when the server shuts down (streams then end)."""

    async def index(request: Request) -> Response:
        runs = await asyncio.to_thread(list_runs)
        return HTMLResponse(_index_html(runs, token))

    async def api_runs(request: Request) -> Response:
        return JSONResponse(await asyncio.to_thread(list_runs))

    async def run_page(request: Request) -> Response:
        run_dir = _find_run(request.path_params["run_id"])
        if run_dir is None:
            return PlainTextResponse("no such run\n", status_code=404)
        try:
            run, lanes, events = await asyncio.to_thread(load_run, run_dir)
        except StoreError as exc:
            return PlainTextResponse(f"cannot read the run: {exc}\n", status_code=500)
        builder = ReplayBuilder(run, lanes)
        for ev in events:
            builder.add(ev)
        stream = f"/run/{quote(run_dir.name)}/events?token={quote(token)}&after={builder.last_seq}"
        return HTMLResponse(
            render_html(builder.document(), stream=stream), headers={"Cache-Control": "no-store"}
        )

    async def run_events(request: Request) -> Response:
        run_dir = _find_run(request.path_params["run_id"])
        if run_dir is None:
            return PlainTextResponse("no such run\n", status_code=404)
        after = _int(request.query_params.get("after"))
        # A reconnecting EventSource says where it got to; never send a point twice.
        after = max(after, _int(request.headers.get("last-event-id")))
        return StreamingResponse(
            _points(run_dir / DB_NAME, after, poll, stopping),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    routes = [
        Route("/", index),
        Route("/api/runs", api_runs),
        Route("/run/{run_id}", run_page),
        Route("/run/{run_id}/events", run_events),
    ]
    middleware = [
        Middleware(TrustedHostMiddleware, allowed_hosts=[LOOPBACK, "localhost"]),
        Middleware(TokenGuard, token=token),
    ]
    return Starlette(routes=routes, middleware=middleware)


def _int(text: str | None) -> int:
    try:
        return max(0, int(text or 0))
    except ValueError:
        return 0


async def _points(
    db: Path, after: int, poll: float, stopping: Callable[[], bool]
) -> AsyncIterator[str]:
    """SSE: the points of events after `after`, as they are committed.

    Ends by itself when the server is stopping, so Ctrl-C does not wait on open pages (an
    EventSource reconnects by itself when the server is back).
    """

    def prime() -> tuple[Reader, ReplayBuilder]:
        from flamechase.loader import load_recorded

        reader = Reader(db)
        run = reader.run()
        load_recorded(str(run.get("flow_source") or ""))
        builder = ReplayBuilder(run, reader.lanes())
        # Point numbers continue the page's: fold everything the page already has.
        while builder.last_seq < after:
            batch = reader.events(
                after=builder.last_seq, limit=min(_BATCH, after - builder.last_seq)
            )
            if not batch:
                break
            for ev in batch:
                builder.add(ev)
        return reader, builder

    reader, builder = await asyncio.to_thread(prime)
    try:
        yield "retry: 1000\n\n"
        quiet = 0.0
        while not stopping():
            batch = await asyncio.to_thread(reader.events, builder.last_seq, _BATCH)
            if batch:
                points = [builder.add(ev) for ev in batch]
                data = json.dumps(points, ensure_ascii=False, separators=(",", ":"))
                yield f"id: {builder.last_seq}\nevent: points\ndata: {data}\n\n"
                quiet = 0.0
                continue
            quiet += poll
            if quiet >= KEEPALIVE_SECONDS:
                quiet = 0.0
                yield ": keep-alive\n\n"
            await asyncio.sleep(poll)
    finally:
        reader.close()


def bind(port: int) -> socket.socket:
    """A listening-ready socket on the loopback address only (port 0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, port))
    return sock


def serve(
    port: int, *, token: str | None = None, ready: Callable[[str], None] | None = None
) -> None:
    """Serve until interrupted; `ready(url)` is called once the port is bound."""
    import uvicorn

    token = token or new_token()
    sock = bind(port)
    url = f"http://{LOOPBACK}:{sock.getsockname()[1]}/?token={token}"
    server: uvicorn.Server | None = None

    def stopping() -> bool:
        return server is not None and bool(server.should_exit)

    config = uvicorn.Config(
        create_app(token, stopping=stopping),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=3,
    )
    server = uvicorn.Server(config)
    if ready is not None:
        ready(url)
    server.run(sockets=[sock])
