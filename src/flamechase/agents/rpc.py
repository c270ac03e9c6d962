"""JSON-RPC 2.0 over stdio for the CLIs that speak it (codex app-server, ACP agents).

A `CliSession` whose CLI sends one JSON message per line both ways: requests wait for their
response while every other message (notifications, the CLI's own requests) is routed to the
subclass. Must never raise for agent misbehaviour beyond `RpcError` (an error response).
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping
from typing import Any

from flamechase.agents.backend import SpawnHook, TurnRequest
from flamechase.agents.clisession import CliSession, ProcessGone
from flamechase.agents.jsonread import as_dict, as_str, loads
from flamechase.agents.limits import RetryPolicy

__all__ = ["RpcError", "RpcSession", "unsupported"]


class RpcError(Exception):
    """A JSON-RPC error response to one of our requests."""

    def __init__(self, method: str, error: Mapping[str, Any]) -> None:
        self.code = error.get("code")
        self.message = as_str(error.get("message")) or json.dumps(error)[:300]
        self.data = error.get("data")
        super().__init__(f"{method}: {self.message}")


class RpcSession(CliSession):
    """A CliSession whose CLI speaks JSON-RPC 2.0, one message per line, both ways."""

    #: Whether to put "jsonrpc": "2.0" on our messages (ACP requires it; codex omits it).
    jsonrpc_header: bool = True

    def __init__(self, request: TurnRequest, on_spawn: SpawnHook, retry: RetryPolicy) -> None:
        super().__init__(request, on_spawn, retry)
        self._next_id = 0

    async def _request(self, method: str, params: Mapping[str, Any], deadline: float) -> Any:
        """Send a request and wait for its response, handling everything that comes first."""
        self._next_id += 1
        rid = self._next_id
        message: dict[str, Any] = {"id": rid, "method": method, "params": dict(params)}
        if self.jsonrpc_header:
            message = {"jsonrpc": "2.0", **message}
        await self._write(message)
        while True:
            obj = await self._next_message(deadline)
            if obj.get("id") == rid and "method" not in obj:
                if "error" in obj:
                    raise RpcError(method, as_dict(obj.get("error")))
                return obj.get("result")
            await self._dispatch(obj)

    async def _notify(self, method: str, params: Mapping[str, Any]) -> None:
        message: dict[str, Any] = {"method": method, "params": dict(params)}
        if self.jsonrpc_header:
            message = {"jsonrpc": "2.0", **message}
        await self._write(message)

    async def _next_message(self, deadline: float) -> dict[str, Any]:
        """The next JSON object from the CLI; garbage lines are skipped (kept in the transcript)."""
        while True:
            line = await self._read(deadline)
            if line is None:
                raise ProcessGone
            obj = loads(line)
            if obj is not None:
                return obj

    async def _dispatch(self, obj: dict[str, Any]) -> None:
        """Route a message that is not the response we wait for."""
        method = obj.get("method")
        if not isinstance(method, str):
            return  # a stray response: ignore
        params = as_dict(obj.get("params"))
        if "id" in obj and obj.get("id") is not None:
            result, error = self._serve(method, params)
            reply: dict[str, Any] = {"id": obj["id"]}
            if error is not None:
                reply["error"] = error
            else:
                reply["result"] = result
            if self.jsonrpc_header:
                reply = {"jsonrpc": "2.0", **reply}
            await self._write(reply)
        else:
            self._notified(method, params)

    @abc.abstractmethod
    def _serve(self, method: str, params: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        """Answer a request from the CLI: (result, None) or (None, error object)."""

    @abc.abstractmethod
    def _notified(self, method: str, params: dict[str, Any]) -> None:
        """Take in a notification from the CLI."""


def unsupported(method: str) -> tuple[None, dict[str, Any]]:
    """The JSON-RPC 'method not found' error for a request we do not serve."""
    return None, {"code": -32601, "message": f"flamechase does not serve {method}"}
