"""`flamechase serve`: loopback only, token required, and a run page that follows a live run."""

from __future__ import annotations

import html
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from flamechase.view.replay import build_document, load_run
from tests.helpers import FLAMECHASE, REPORT_OK, actor
from tests.view.conftest import Run


class Server:
    def __init__(self, home: Path) -> None:
        env = dict(os.environ, FLAMECHASE_HOME=str(home), PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [*FLAMECHASE, "serve", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "open http://127.0.0.1:" in line, (line, self.proc.stderr)
        self.url = line.split("open ", 1)[1].strip()
        parts = urlsplit(self.url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.token = parts.query.removeprefix("token=")
        self._wait_up()

    def _wait_up(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                self.get("/api/runs")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        raise AssertionError("serve did not come up")

    def get(
        self,
        path: str,
        *,
        token: str | None = "",
        headers: dict[str, str] | None = None,
        timeout: float = 10,
    ) -> tuple[int, str]:
        sep = "&" if "?" in path else "?"
        if token is not None:
            path += f"{sep}token={self.token if token == '' else token}"
        req = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as res:
                return res.status, res.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def server(sim_run: Run) -> Iterator[Server]:
    s = Server(sim_run.home)
    yield s
    s.close()


def test_token_is_required_and_checked(server: Server, sim_run: Run) -> None:
    assert urlsplit(server.url).hostname == "127.0.0.1"
    assert len(server.token) >= 24
    for token in (None, "x" * 32, server.token[:-1]):
        status, body = server.get("/", token=token)
        assert status == 403, token
        assert "token" in body
    assert server.get(f"/run/{sim_run.run['id']}", token=None)[0] == 403
    assert server.get(f"/run/{sim_run.run['id']}/events?after=0", token="nope")[0] == 403
    status, body = server.get("/")
    assert status == 200
    assert sim_run.run["id"] in body
    status, body = server.get("/api/runs")
    assert status == 200
    assert [r["id"] for r in json.loads(body)] == [sim_run.run["id"]]
    status, body = server.get(f"/run/{sim_run.run['id']}")
    assert status == 200 and 'id="fc-data"' in body and "data-stream=" in body
    assert server.get("/run/../../etc")[0] == 404
    assert server.get("/run/" + sim_run.run["id"][:8])[0] == 404  # no prefix matching


def test_foreign_host_header_is_refused(server: Server) -> None:
    status, _ = server.get("/", headers={"Host": "evil.example:80"})
    assert status == 400


def _read_sse(
    server: Server, path: str, headers: dict[str, str] | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """The first `points` message of an event stream: (its id, its points)."""
    req = urllib.request.Request(f"{server.base}{path}&token={server.token}", headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as res:
        assert res.headers["Content-Type"].startswith("text/event-stream")
        fields: dict[str, str] = {}
        while True:
            line = res.readline().decode().rstrip("\n")
            if not line:
                if fields.get("event") == "points":
                    return fields["id"], json.loads(fields["data"])
                fields = {}
                continue
            key, _, value = line.partition(": ")
            fields[key] = value


def test_event_stream_resumes_after_the_last_event_id(server: Server, sim_run: Run) -> None:
    rid = sim_run.run["id"]
    seqs = [e["seq"] for e in sim_run.events]
    last_id, points = _read_sse(server, f"/run/{rid}/events?after=10")
    assert [p["q"] for p in points] == [s for s in seqs if s > 10]
    assert int(last_id) == seqs[-1]
    # The points are the replay's own: same sentences as a page built from scratch.
    doc = build_document(sim_run.run, sim_run.lanes, sim_run.events)
    assert points == doc["points"][len(doc["points"]) - len(points) :]
    _, again = _read_sse(
        server, f"/run/{rid}/events?after=10", headers={"Last-Event-ID": str(seqs[-3])}
    )
    assert [p["q"] for p in again] == seqs[-2:]


def test_live_page_follows_a_running_flow(browser: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    ws.mkdir()
    slow = actor(tmp_path, "slow.sh", "sleep 0.6\n" + REPORT_OK)
    srv = Server(home)
    run = None
    try:
        env = dict(os.environ, FLAMECHASE_HOME=str(home))
        run = subprocess.Popen(
            [
                *FLAMECHASE,
                "exec",
                "-f",
                "flame_chase",
                "-a",
                f"exec:{slow}",
                "-a",
                f"exec:{slow}",
                "-p",
                "budget.turns=6,rest_seconds=0.05",
                "take notes",
            ],
            cwd=ws,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        runs: list[dict[str, Any]] = []
        while not runs and time.monotonic() < deadline:
            runs = json.loads(srv.get("/api/runs")[1])
            time.sleep(0.05)
        assert runs, "the run never appeared in the list"
        rid = runs[0]["id"]
        ctx = browser.new_context()
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(srv.url)
        page.click(f"text={rid}")
        page.wait_for_function("() => window.fcReplay && window.fcReplay.count() > 0")
        first = page.evaluate("() => window.fcReplay.count()")
        assert page.locator("#livebadge").is_visible()
        page.wait_for_function(
            "() => document.getElementById('now-x').textContent.startsWith('Run finished')",
            timeout=60_000,
        )
        assert run.wait(timeout=30) == 0, run.stderr.read() if run.stderr else ""
        count = page.evaluate("() => window.fcReplay.count()")
        assert first < count, "no event arrived while the page was open"
        stored = load_run(home / "runs" / rid)
        doc = build_document(*stored)
        assert count == len(stored[2])
        assert page.evaluate("() => window.fcReplay.cur()") == count - 1  # it followed along
        texts = page.evaluate("""async () => {
          const out = [], box = document.getElementById("story");
          for (let i = 0; i < window.fcReplay.count(); i++) {
            window.fcReplay.go(i);
            await new Promise((r) => requestAnimationFrame(() => r()));
            out.push(document.getElementById("now-x").textContent);
          }
          box.scrollTop = 0;
          return out;
        }""")
        assert texts == [p["x"] for p in doc["points"]]
        assert page.locator('.trow[data-lane="lane-1"] .blk').count() == 6
        assert not errors, errors
        ctx.close()
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.wait()
        srv.close()


def test_the_list_shows_each_runs_task(server: Server, sim_run: Run, browser: Any) -> None:
    first = str(sim_run.run["task"]).strip().splitlines()[0]
    runs = json.loads(server.get("/api/runs")[1])
    assert [r["task_line"] for r in runs] == [first]
    status, body = server.get("/")
    assert status == 200 and f'<td class="task">{html.escape(first)}</td>' in body
    # The list redraws itself every few seconds: the task survives the redraw.
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        page.goto(server.url)
        cell = page.locator("#runs td.task")
        assert cell.text_content() == first
        page.evaluate("() => document.querySelector('#runs tr').dataset.old = '1'")
        page.wait_for_function(
            "() => !document.querySelector('#runs tr').dataset.old", timeout=20_000
        )
        assert cell.text_content() == first and cell.is_visible()
        headers = page.locator("thead th").all_text_contents()
        assert headers[:2] == ["run", "task"]
    finally:
        ctx.close()
