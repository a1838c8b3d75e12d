"""The Python SDK's default client (`mcp.Client`, which negotiates 2026-07-28) through
`mcp-router connect`: lists the tools, calls one, and prints one JSON line with the protocol
version, the tool count and the call's text.

Usage: python modern_client.py ROUTER CONFIG
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters


async def main() -> None:
    router, config = sys.argv[1:3]
    params = StdioServerParameters(
        command=router, args=["connect", "--config", config], env=dict(os.environ)
    )
    async with Client(params) as client:
        tools = await client.list_tools()
        result = await client.call_tool("mcp__notes__echo", {"text": "modern"})
        print(
            json.dumps(
                {
                    "protocol": str(client.protocol_version),
                    "tools": [t.name for t in tools.tools],
                    "echo": result.content[0].text if result.content else "",
                }
            ),
            flush=True,
        )


asyncio.run(main())
