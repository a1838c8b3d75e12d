"""The Python SDK's default client (`mcp.Client`, which negotiates 2026-07-28) through
`mcp-router connect`: lists the tools, calls one, and prints one JSON line with the protocol
version, the tool count and the call's text.

Usage: python modern_client.py ROUTER CONFIG
   or: python modern_client.py URL SECRET (the router's streamable HTTP listener, its secret)
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


async def main() -> None:
    router, config = sys.argv[1:3]
    if router.startswith("http"):
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {config}"})
        server = streamable_http_client(router, http_client=http)
    else:
        server = StdioServerParameters(
            command=router, args=["connect", "--config", config], env=dict(os.environ)
        )
    async with Client(server) as client:
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
