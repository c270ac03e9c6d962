"""A scripted model server on 127.0.0.1 speaking the four dialects the real CLIs use.

    POST /v1/messages                                  Anthropic Messages (claude), SSE
    POST /v1/responses                                 OpenAI Responses (codex), SSE
    POST /v1/chat/completions                          OpenAI Chat Completions (opencode), SSE
    POST /v1beta/models/M:streamGenerateContent        Gemini (gemini), SSE
    POST /v1beta/models/M:generateContent              Gemini, one JSON answer

Each request is parsed into a `script.Conversation`, the `Script` decides the next step (or
a fault), and the dialect renders it. Every exchange is logged (`ModelServer.log`) so tests
can check what a CLI sent and what it was told, including the usage of every answer.

It binds 127.0.0.1 only, answers anything else with 404 (logged), and never forwards.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.realcli import dialects
from tests.realcli.script import Conversation, Fault, Script, Step, Usage


@dataclasses.dataclass
class Exchange:
    """One request and what it was answered."""

    method: str
    path: str
    dialect: str
    conversation: Conversation | None
    step: Step | None
    fault: Fault | None
    usage: Usage | None
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = dataclasses.field(default_factory=dict)


class ModelServer:
    """Start with `with ModelServer() as server:`; `server.url` is http://127.0.0.1:PORT."""

    def __init__(self, usage: Usage | None = None) -> None:
        self.script = Script()
        self.usage = usage or Usage()
        self.log: list[Exchange] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._ids = 0
        self.stopping = threading.Event()  # releases requests held by a `hang` fault

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self.log.append(exchange)

    def exchanges(
        self, dialect: str | None = None, *, main: bool | None = None, match: str | None = None
    ) -> list[Exchange]:
        with self._lock:
            out = list(self.log)
        if dialect is not None:
            out = [e for e in out if e.dialect == dialect]
        if main is not None:
            out = [e for e in out if e.conversation is not None and e.conversation.main == main]
        if match is not None:
            out = [e for e in out if e.conversation is not None and match in e.conversation.text]
        return out

    def usage_sent(self, dialect: str | None = None, match: str | None = None) -> Usage:
        """The usage of every successful answer (optionally of conversations with `match`)."""
        total = Usage(0, 0, 0, 0)
        for e in self.exchanges(dialect, match=match):
            if e.usage is not None and e.fault is None:
                total = Usage(
                    total.input + e.usage.input,
                    total.output + e.usage.output,
                    total.cache_read + e.usage.cache_read,
                    total.cache_write + e.usage.cache_write,
                )
        return total

    def outbound(self) -> list[str]:
        """Hosts a CLI tried to reach through the proxy (must stay empty)."""
        return [f"{e.method} {e.path}" for e in self.exchanges("outbound")]

    def unknown(self) -> list[Exchange]:
        """Requests no dialect knew (a CLI calling an endpoint we do not serve)."""
        return [e for e in self.exchanges() if e.dialect == "unknown"]


def _handler_for(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the exchange log is the record

        def do_GET(self) -> None:
            self._answer_plain("GET")

        def do_CONNECT(self) -> None:
            # The server is also every CLI's HTTP(S)_PROXY: whatever a CLI tries to reach
            # beyond loopback lands here, is refused and logged (`ModelServer.outbound`).
            server.record(
                Exchange("CONNECT", self.path, "outbound", None, None, None, None, 403, {})
            )
            self._send_json(403, {"error": {"message": "flamechase tests: no internet"}})

        def do_HEAD(self) -> None:
            self._answer_plain("HEAD")

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            dialect = dialects.for_path(self.path)
            if self.path.startswith(("http://", "https://")):
                server.record(
                    Exchange("POST", self.path, "outbound", None, None, None, None, 403, {})
                )
                self._send_json(403, {"error": {"message": "flamechase tests: no internet"}})
                return
            if dialect is None or not isinstance(body, dict):
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                server.record(
                    Exchange(
                        "POST",
                        self.path,
                        "unknown",
                        None,
                        None,
                        None,
                        None,
                        404,
                        body if isinstance(body, dict) else {},
                    )
                )
                return
            conv = dialect.parse(body, self.path)
            conv.raw = raw.decode("utf-8", "replace")
            fault = server.script.take_fault(conv)
            step = None if fault is not None else server.script.step(conv)
            usage = server.usage if fault is None else None
            stream = dialect.streams(body, self.path)
            if fault is not None and fault.kind == "hang":
                server.record(
                    Exchange("POST", self.path, dialect.name, conv, None, fault, None, 0, body)
                )
                server.stopping.wait()
                return
            if fault is not None and fault.kind != "cut":
                status, headers, payload = dialect.fault(fault)
                self._send_json(status, payload, headers)
            elif stream:
                events = dialect.events(
                    step or dialects.CUT_STEP, conv, usage or server.usage, server.next_id()
                )
                self._send_sse(
                    events, cut=fault is not None, headers=server.script.headers_for(conv)
                )
                status = 200
            else:
                self._send_json(
                    200,
                    dialect.whole(
                        step or dialects.CUT_STEP, conv, usage or server.usage, server.next_id()
                    ),
                    cut=fault is not None,
                )
                status = 200
            server.record(
                Exchange(
                    "POST",
                    self.path,
                    dialect.name,
                    conv,
                    step,
                    fault,
                    usage,
                    status,
                    body,
                    {k.lower(): v for k, v in self.headers.items()},
                )
            )

        def _answer_plain(self, method: str) -> None:
            kind = "outbound" if self.path.startswith(("http://", "https://")) else "unknown"
            server.record(Exchange(method, self.path, kind, None, None, None, None, 404, {}))
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def _send_json(
            self,
            status: int,
            payload: dict[str, Any],
            headers: dict[str, str] | None = None,
            *,
            cut: bool = False,
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if self.command == "HEAD":
                return
            if cut:  # half the body, then the connection drops
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(data)

        def _send_sse(
            self, events: Iterator[str], *, cut: bool, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            if cut:  # opencode retries a cut stream five times, waiting what this says
                self.send_header("retry-after-ms", "0")
            self.end_headers()
            chunks = list(events)
            if cut:  # half the stream, then the connection drops without the last chunk
                chunks = chunks[: max(1, len(chunks) // 2)]
            for chunk in chunks:
                data = chunk.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            if cut:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler
