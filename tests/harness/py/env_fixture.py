"""A server that tells what environment it was started with (newline-delimited JSON-RPC over
stdio, protocol 2025-11-25, standard library only): `env {name}` answers the variable's value,
or `(unset)`. For the tests of what a stdio server is given (`env`, `env_vars`, the allow-list).

Usage: env_fixture.py
"""

from __future__ import annotations

import os

from jsonrpc_stdio import serve


def answer(request: dict) -> dict | None:
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "env-fixture", "version": "1.0.0"},
        }
    if method == "tools/list":
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        return {"tools": [{"name": "env", "description": "A variable of this server's environment.", "inputSchema": schema}]}
    if method == "tools/call":
        name = ((request.get("params") or {}).get("arguments") or {}).get("name", "")
        value = os.environ.get(name, "(unset)")
        return {"content": [{"type": "text", "text": value}]}
    if method == "ping":
        return {}
    raise LookupError(method)


if __name__ == "__main__":
    serve(answer)
