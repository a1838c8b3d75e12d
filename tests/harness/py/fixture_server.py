"""A fixture MCP server on the Python SDK (mcp==2.3.0) for mcp-router's interop tests.

What it serves, all deterministic:
- `--resources N` resources `fixture://items/{i}` (i = 0..N-1), listed in pages of `--page-size`
  behind opaque cursors (a keyed digest plus an offset; anything else is -32602). Every third
  item is binary (`application/octet-stream`, blob contents); the others are text.
- `fixture://broken`, listed like the others; reading it fails with -32603 and a message.
- Templates, one per page (so template listing pages too): `fixture://items/{id}` and
  `fixture://echo/{text}` (reads back `text`).
- Unknown URIs are -32002 "Resource not found".
- With `--subscribe`: `resources/subscribe` is served (so 2025-11-25 sessions see
  `resources.subscribe`), and each subscription is answered after one
  `notifications/resources/updated` for its URI, as if the resource changed right then.

Usage: fixture_server.py stdio [--resources N] [--page-size K] [--subscribe]
       fixture_server.py http [--resources N] [--page-size K] [--stateless] [--subscribe]
The HTTP mode binds 127.0.0.1 on a free port and prints `listening on http://127.0.0.1:PORT/mcp`
as its first stdout line.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

import loopback_http

SECRET = b"fixture-cursor-key"
BROKEN = "fixture://broken"
ITEM_PREFIX = "fixture://items/"
ECHO_PREFIX = "fixture://echo/"


def item_is_blob(i: int) -> bool:
    return i % 3 == 2


def item_bytes(i: int) -> bytes:
    # Binary on purpose: bytes that are not UTF-8.
    return bytes([0xFF, 0xFE, i % 256, 0x00, 0x80]) + f"item-{i}".encode()


def item_text(i: int) -> str:
    return f"Fixture item {i}: the quick brown fox, number {i}."


def make_cursor(offset: int) -> str:
    tag = hashlib.sha256(SECRET + str(offset).encode()).hexdigest()[:16]
    return base64.urlsafe_b64encode(f"{tag}:{offset}".encode()).decode().rstrip("=")


def parse_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        tag, offset_text = base64.urlsafe_b64decode(padded).decode().split(":", 1)
        offset = int(offset_text)
    except Exception:
        raise MCPError(-32602, f"Invalid cursor: {cursor!r}") from None
    if make_cursor(offset) != cursor or offset < 0 or tag == "":
        raise MCPError(-32602, f"Invalid cursor: {cursor!r}")
    return offset


def build_resources(count: int) -> list[types.Resource]:
    out = []
    for i in range(count):
        mime = "application/octet-stream" if item_is_blob(i) else "text/plain"
        out.append(types.Resource(uri=f"{ITEM_PREFIX}{i}", name=f"item-{i}", mime_type=mime))
    out.append(types.Resource(uri=BROKEN, name="broken", mime_type="text/plain"))
    return out


TEMPLATES = [
    types.ResourceTemplate(
        uri_template=ITEM_PREFIX + "{id}", name="item", mime_type="text/plain",
        description="One fixture item by number",
    ),
    types.ResourceTemplate(
        uri_template=ECHO_PREFIX + "{text}", name="echo", mime_type="text/plain",
        description="Reads back its text parameter",
    ),
]


def page(items: list[Any], cursor: str | None, size: int) -> tuple[list[Any], str | None]:
    start = parse_cursor(cursor)
    if start > len(items):
        raise MCPError(-32602, f"Invalid cursor: {cursor!r}")
    end = start + size
    return items[start:end], (make_cursor(end) if end < len(items) else None)


def make_server(count: int, page_size: int, subscribe: bool = False) -> Server[Any]:
    resources = build_resources(count)

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None):
        chunk, next_cursor = page(resources, params.cursor if params else None, page_size)
        return types.ListResourcesResult(resources=chunk, next_cursor=next_cursor)

    async def list_templates(ctx: Any, params: types.PaginatedRequestParams | None):
        chunk, next_cursor = page(TEMPLATES, params.cursor if params else None, 1)
        return types.ListResourceTemplatesResult(resource_templates=chunk, next_cursor=next_cursor)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams):
        uri = str(params.uri)
        if uri == BROKEN:
            raise MCPError(-32603, "fixture read failed: the backing store is unavailable")
        if uri.startswith(ECHO_PREFIX):
            text = uri[len(ECHO_PREFIX):]
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
            )
        if uri.startswith(ITEM_PREFIX):
            suffix = uri[len(ITEM_PREFIX):]
            if suffix.isdigit() and int(suffix) < count:
                i = int(suffix)
                if item_is_blob(i):
                    blob = base64.b64encode(item_bytes(i)).decode()
                    contents: Any = types.BlobResourceContents(
                        uri=uri, mime_type="application/octet-stream", blob=blob
                    )
                else:
                    contents = types.TextResourceContents(
                        uri=uri, mime_type="text/plain", text=item_text(i)
                    )
                return types.ReadResourceResult(contents=[contents])
        raise MCPError(-32002, "Resource not found", {"uri": uri})

    async def subscribe_resource(ctx: Any, params: types.SubscribeRequestParams):
        await ctx.session.send_resource_updated(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe_resource(ctx: Any, params: types.UnsubscribeRequestParams):
        return types.EmptyResult()

    return Server(
        "py-fixture",
        version="1.0.0",
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe_resource if subscribe else None,
        on_unsubscribe_resource=unsubscribe_resource if subscribe else None,
    )


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(server: Server[Any], stateless: bool) -> None:
    # Stateless mode (no session id, plain JSON answers instead of SSE) is how many servers are
    # deployed behind load balancers.
    app = server.streamable_http_app(
        host="127.0.0.1", stateless_http=stateless, json_response=stateless
    )
    await loopback_http.serve(app)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--resources", type=int, default=23)
    parser.add_argument("--page-size", type=int, default=5)
    parser.add_argument("--stateless", action="store_true", help="http: stateless, JSON answers")
    parser.add_argument("--subscribe", action="store_true", help="serve resources/subscribe")
    args = parser.parse_args()
    if args.page_size < 1 or args.resources < 0:
        sys.exit("--page-size must be at least 1 and --resources not negative")
    server = make_server(args.resources, args.page_size, args.subscribe)
    if args.transport == "stdio":
        anyio.run(serve_stdio, server)
    else:
        anyio.run(serve_http, server, args.stateless)


if __name__ == "__main__":
    main()
