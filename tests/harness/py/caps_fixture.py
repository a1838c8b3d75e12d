"""A server that tells what the client declared, spoken by hand over stdio (newline-delimited
JSON-RPC, protocol 2025-11-25, standard library only): its tool `capabilities` answers with the
`capabilities` the client sent in `initialize`, as JSON text.

Usage: caps_fixture.py
"""

from __future__ import annotations

import json

from jsonrpc_stdio import serve

declared: dict = {}


def answer(request: dict) -> dict:
    global declared
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        declared = params.get("capabilities") or {}
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "caps-fixture", "version": "1.0.0"},
        }
    if method == "tools/list":
        schema = {"type": "object", "properties": {}}
        tool = {"name": "capabilities", "description": "What the client declared.", "inputSchema": schema}
        return {"tools": [tool]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": json.dumps(declared, sort_keys=True)}]}
    if method == "ping":
        return {}
    raise LookupError(method)


if __name__ == "__main__":
    serve(answer)
