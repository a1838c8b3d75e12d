"""A second Python SDK fixture, written the way most Python servers are: the high-level
`MCPServer` (formerly FastMCP) with decorators. What it serves:
- static resources `notes://index` (text), `notes://logo.bin` (bytes) and `notes://broken`
  (its function raises);
- templates `notes://{name}`, `search://items{?q,limit}` (query variables, optional) and
  `files://{+path}` (reserved expansion: slashes kept);
- tools `add(a, b)` and `fail()` (raises).

Usage: mcpserver_fixture.py stdio | http   (http: 127.0.0.1, free port, URL on stdout)
"""

from __future__ import annotations

import sys

import anyio
from mcp.server import MCPServer

import loopback_http

server = MCPServer("py-mcpserver", version="1.0.0")


@server.resource("notes://index", name="index", mime_type="text/plain")
def index() -> str:
    return "notes: alpha, beta"


@server.resource("notes://logo.bin", name="logo", mime_type="application/octet-stream")
def logo() -> bytes:
    return bytes(range(256))


@server.resource("notes://broken", name="broken", mime_type="text/plain")
def broken() -> str:
    raise ValueError("the notes store is offline")


@server.resource("notes://{name}", name="note", mime_type="text/plain")
def note(name: str) -> str:
    return f"Note {name}"


@server.resource("search://items{?q,limit}", name="search", mime_type="text/plain")
def search(q: str = "", limit: int = 10) -> str:
    return f"search q={q!r} limit={limit}"


@server.resource("files://{+path}", name="file", mime_type="text/plain")
def file(path: str) -> str:
    return f"file at {path}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool fails on purpose")


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) == 2 else ""
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        anyio.run(loopback_http.serve, server.streamable_http_app(host="127.0.0.1"))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
