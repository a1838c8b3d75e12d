"""A server whose tools are read from a JSON file at each `tools/list` (standard library only,
protocol 2025-11-25): a test edits the file between runs to change a description, a schema, an
annotation or a title, add, rename or move a tool — what a server could do between two runs.
`tools/call` answers "<name> ran" for a tool the file lists.

Usage: tools_file_fixture.py TOOLS.json
"""

from __future__ import annotations

import json
import sys

from jsonrpc_stdio import serve

PATH = sys.argv[1]


def tools() -> list:
    with open(PATH, encoding="utf-8") as f:
        return json.load(f)


def answer(request: dict) -> dict | None:
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tools-file-fixture", "version": "1.0.0"},
        }
    if method == "tools/list":
        return {"tools": tools()}
    if method == "tools/call":
        name = (request.get("params") or {}).get("name")
        if any(t["name"] == name for t in tools()):
            return {"content": [{"type": "text", "text": f"{name} ran"}]}
        raise KeyError(name)
    if method == "ping":
        return {}
    raise LookupError(method)


if __name__ == "__main__":
    serve(answer)
