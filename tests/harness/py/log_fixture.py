"""A server that logs (`notifications/message`), spoken by hand over stdio (newline-delimited
JSON-RPC, protocol 2025-11-25, standard library only) so every message is exact: it declares
`logging`, keeps the level `logging/setLevel` asks for, and its tool `log` sends one message at
each of the eight levels the level lets through (least severe first, logger "fixture", data
"<level> message"), then one `error` message whose data is 10,000 characters, then answers.

Usage: log_fixture.py
"""

from __future__ import annotations

from jsonrpc_stdio import send, serve

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
level = "debug"


def log(at: str, data: object) -> None:
    if LEVELS.index(at) >= LEVELS.index(level):
        params = {"level": at, "logger": "fixture", "data": data}
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})


def answer(request: dict) -> dict:
    global level
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "log-fixture", "version": "1.0.0"},
        }
    if method == "logging/setLevel":
        level = params["level"]
        return {}
    if method == "tools/list":
        schema = {"type": "object", "properties": {}}
        return {"tools": [{"name": "log", "description": "Log at every level.", "inputSchema": schema}]}
    if method == "tools/call":
        for at in LEVELS:
            log(at, f"{at} message")
        log("error", "x" * 10000)
        return {"content": [{"type": "text", "text": f"logged at {level} and above"}]}
    if method == "ping":
        return {}
    raise LookupError(method)


if __name__ == "__main__":
    serve(answer)
