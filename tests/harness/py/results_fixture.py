"""A Python SDK fixture (low-level `Server`) for tool results past the router's budget:
- `structured(mb)`: a short text and `mb` megabytes of `structuredContent` (rows of text);
- `images(count)`: `count` PNG-typed images of 100 KiB each;
- `embedded(mb)`: one embedded text resource of `mb` megabytes, and nothing else;
- `linked()`: a `resource_link` to `hidden://note`, which `resources/read` serves but
  `resources/list` never lists.
Every payload is a function of its arguments, so a test can rebuild what it expects.

Usage: results_fixture.py stdio
"""

from __future__ import annotations

import base64
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

HIDDEN = "hidden://note"


def rows(mb: int) -> list[str]:
    # 1 MiB is 16,384 rows of 64 characters (with the row number in front).
    return [f"{i:08d}" + "r" * 56 for i in range(mb * 16384)]


def embedded_text(mb: int) -> str:
    line = "line of the embedded resource, é and € included...\n"
    return line * (mb * 1024 * 1024 // len(line.encode()))


def image_bytes(i: int) -> bytes:
    return bytes((i + j) % 251 for j in range(100 * 1024))


def tool(name: str, properties: dict[str, Any]) -> types.Tool:
    return types.Tool(name=name, input_schema={"type": "object", "properties": properties})


TOOLS = [
    tool("structured", {"mb": {"type": "integer"}}),
    tool("images", {"count": {"type": "integer"}}),
    tool("embedded", {"mb": {"type": "integer"}}),
    tool("linked", {}),
]


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams):
    args = params.arguments or {}
    if params.name == "structured":
        data = {"rows": rows(int(args.get("mb", 10)))}
        return types.CallToolResult(
            content=[types.TextContent(text=f"{len(data['rows'])} rows")], structured_content=data
        )
    if params.name == "images":
        content: list[Any] = [
            types.ImageContent(data=base64.b64encode(image_bytes(i)).decode(), mime_type="image/png")
            for i in range(int(args.get("count", 50)))
        ]
        return types.CallToolResult(content=content)
    if params.name == "embedded":
        resource = types.TextResourceContents(
            uri="doc://huge", mime_type="text/plain", text=embedded_text(int(args.get("mb", 8)))
        )
        return types.CallToolResult(content=[types.EmbeddedResource(resource=resource)])
    if params.name == "linked":
        link = types.ResourceLink(uri=HIDDEN, name="note", mime_type="text/plain")
        return types.CallToolResult(content=[types.TextContent(text="see the link"), link])
    raise MCPError(-32602, f"unknown tool {params.name}")


async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None):
    return types.ListResourcesResult(resources=[])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams):
    uri = str(params.uri)
    if uri == HIDDEN:
        text = "a note only a link leads to"
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
        )
    raise MCPError(-32002, "Resource not found", {"uri": uri})


async def main() -> None:
    server = Server(
        "py-results",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
