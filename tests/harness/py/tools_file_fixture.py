"""A server whose tools are read from a JSON file at each `tools/list` (standard library only,
protocol 2025-11-25): a test edits the file between runs to change a description, a schema, an
annotation or a title, add, rename or move a tool — what a server could do between two runs.
`tools/call` answers "<name> ran" for a tool the file lists.

The file is either the list of tools or an object `{"tools": [...], "prompts": [...],
"templates": [...], "templatePageSize": N}`: prompts (`prompts/get` answers "<name> prompt")
and resource templates, served `templatePageSize` to a page (all on one page when left out).

Usage: tools_file_fixture.py TOOLS.json
"""

from __future__ import annotations

import json
import sys

from jsonrpc_stdio import serve

PATH = sys.argv[1]


def load() -> dict:
    with open(PATH, encoding="utf-8") as f:
        data = json.load(f)
    return {"tools": data} if isinstance(data, list) else data


def tools() -> list:
    return load().get("tools", [])


def capabilities() -> dict:
    data = load()
    caps: dict = {"tools": {}}
    if "prompts" in data:
        caps["prompts"] = {}
    if "templates" in data:
        caps["resources"] = {}
    return caps


def templates_page(cursor: str | None) -> dict:
    data = load()
    templates = data.get("templates", [])
    size = data.get("templatePageSize") or max(len(templates), 1)
    start = int(cursor or 0)
    page: dict = {"resourceTemplates": templates[start:start + size]}
    if start + size < len(templates):
        page["nextCursor"] = str(start + size)
    return page


def answer(request: dict) -> dict | None:
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities(),
            "serverInfo": {"name": "tools-file-fixture", "version": "1.0.0"},
        }
    if method == "tools/list":
        return {"tools": tools()}
    if method == "tools/call":
        name = (request.get("params") or {}).get("name")
        if any(t["name"] == name for t in tools()):
            return {"content": [{"type": "text", "text": f"{name} ran"}]}
        raise KeyError(name)
    params = request.get("params") or {}
    if method == "prompts/list":
        return {"prompts": load().get("prompts", [])}
    if method == "prompts/get":
        name = params.get("name")
        if any(p["name"] == name for p in load().get("prompts", [])):
            text = f"{name} prompt"
            return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
        raise KeyError(name)
    if method == "resources/templates/list":
        return templates_page(params.get("cursor"))
    if method == "resources/list":
        return {"resources": []}
    if method == "ping":
        return {}
    raise LookupError(method)


if __name__ == "__main__":
    serve(answer)
