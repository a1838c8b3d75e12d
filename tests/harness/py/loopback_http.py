"""Serve a Starlette app (an MCP server's streamable-HTTP app) on 127.0.0.1 and a free port the
kernel picks; the first stdout line is `listening on http://127.0.0.1:PORT/mcp`."""

from __future__ import annotations

import socket
from typing import Any


async def serve(app: Any) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listen before announcing: a client that connects between the announcement and uvicorn's
    # own listen() would be refused (seen as a rare "error sending request" at initialize).
    sock.listen(128)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning")
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])
