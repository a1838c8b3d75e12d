"""A hostile server, spoken by hand over stdio (newline-delimited JSON-RPC, protocol
2025-11-25, standard library only): each tool misbehaves in one way, so the router's defences
can be tried one by one next to a well-behaved server.

- `flood`: 100,000 log messages and 100,000 progress reports, then the answer;
- `huge`: an answer of 70 MB (past the router's 64 MiB limit), its id first;
- `huge_last`: the same with its id last, as TypeScript's SDK writes it;
- `garbage`: a line that is not JSON, an answer to an id nobody asked, then the answer;
- `close_stdout`: closes its stdout and keeps running (stdin is read on);
- `ok`: answers "fine".

Usage: hostile_fixture.py
"""

from __future__ import annotations

import json
import os
import sys
import time

from jsonrpc_stdio import send, serve

TOOLS = ["flood", "huge", "huge_last", "garbage", "close_stdout", "ok"]


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}]}


def call(request: dict) -> dict | None:
    params = request.get("params") or {}
    name = params.get("name")
    token = (params.get("_meta") or {}).get("progressToken")
    if name == "flood":
        out = []
        for n in range(100_000):
            message = {"level": "info", "logger": "flood", "data": f"message {n}"}
            out.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": message}))
            if token is not None:
                progress = {"progressToken": token, "progress": n, "total": 100_000}
                out.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}))
        sys.stdout.write("\n".join(out) + "\n")
        return text("flooded")
    if name in ("huge", "huge_last"):
        body = json.dumps(text("x" * 70_000_000))
        if name == "huge":
            line = '{"jsonrpc":"2.0","id":' + json.dumps(request["id"]) + ',"result":' + body + "}"
        else:
            line = '{"result":' + body + ',"jsonrpc":"2.0","id":' + json.dumps(request["id"]) + "}"
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        return None
    if name == "garbage":
        sys.stdout.write("this is not JSON-RPC {{{\n")
        send({"jsonrpc": "2.0", "id": 987654321, "result": text("nobody asked")})
        return text("after garbage")
    if name == "close_stdout":
        sys.stdout.flush()
        os.close(1)
        for _ in sys.stdin:
            pass
        time.sleep(3600)
    if name == "ok":
        return text("fine")
    raise KeyError(name)


def answer(request: dict) -> dict | None:
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "hostile-fixture", "version": "1.0.0"},
        }
    if method == "tools/list":
        schema = {"type": "object", "properties": {}}
        return {"tools": [{"name": t, "description": f"Misbehaves: {t}.", "inputSchema": schema} for t in TOOLS]}
    if method == "tools/call":
        return call(request)
    if method in ("ping", "logging/setLevel"):
        return {}
    raise LookupError(method)


if __name__ == "__main__":
    serve(answer)
