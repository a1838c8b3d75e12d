"""A Python SDK client of the shared router: it starts `mcp-router connect` as an agent would
list it, lists the tools, calls one, reads a resource through the resource tools, answers an
elicitation with its own name, prints one JSON line with what it saw, then keeps the session
open for HOLD_MS (so the test can look at the processes) and closes it.

Usage: python shared_client.py ROUTER CONFIG NAME HOLD_MS
   or: python shared_client.py URL SECRET NAME HOLD_MS (streamable HTTP, the bearer secret)
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


def transport(router: str, config: str):
    """`mcp-router connect` over stdio, or the router's HTTP listener with its secret."""
    if router.startswith("http"):
        headers = {"Authorization": f"Bearer {config}"}
        client = create_mcp_http_client(headers=headers)
        return streamable_http_client(router, http_client=client)
    params = StdioServerParameters(
        command=router, args=["connect", "--config", config], env=dict(os.environ)
    )
    return stdio_client(params)


async def main() -> None:
    router, config, name, hold = sys.argv[1:5]
    asked = 0

    async def elicit(_context, _params):
        nonlocal asked
        asked += 1
        return types.ElicitResult(action="accept", content={"name": name})

    async with transport(router, config) as streams:
        read_stream, write_stream = streams[0], streams[1]
        async with ClientSession(
            read_stream, write_stream, elicitation_callback=elicit
        ) as session:
            await session.initialize()
            tools = await session.list_tools()

            async def text(tool, arguments):
                result = await session.call_tool(tool, arguments)
                return result.content[0].text if result.content else ""

            echo = await text("mcp__notes__echo", {"text": name})
            read = await text(
                "read_mcp_resource", {"server": "docs", "uri": "demo://docs/README.md"}
            )
            ask = await text("mcp__docs__ask", {})
            print(
                json.dumps(
                    {
                        "tools": [t.name for t in tools.tools],
                        "echo": echo,
                        "read": '"contents"' in read,
                        "ask": ask,
                        "asked": asked,
                    }
                ),
                flush=True,
            )
            await asyncio.sleep(int(hold) / 1000)


asyncio.run(main())
