"""The differential side of mcp-router's interop tests: the Python SDK client (mcp==2.3.0) pages
`resources/list` and `resources/templates/list` to the end itself and prints what it collected as
one JSON object on stdout:

  {"resources": [{"uri", "name", "mimeType"}...], "templates": [{"uriTemplate", "name", "mimeType"}...]}

Usage: collect.py --url http://127.0.0.1:PORT/mcp
       collect.py --stdio COMMAND [ARG...]
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import StdioServerParameters
from mcp.client import Client

MAX_PAGES = 10_000


async def collect(target: Any) -> dict[str, list[dict[str, Any]]]:
    async with Client(target, mode="legacy", read_timeout_seconds=30) as client:
        resources: list[dict[str, Any]] = []
        cursor = None
        for _ in range(MAX_PAGES):
            result = await client.list_resources(cursor=cursor, cache_mode="bypass")
            resources += [
                {"uri": str(r.uri), "name": r.name, "mimeType": r.mime_type} for r in result.resources
            ]
            cursor = result.next_cursor
            if not cursor:
                break
        else:
            raise SystemExit("resources/list did not end")
        templates: list[dict[str, Any]] = []
        cursor = None
        for _ in range(MAX_PAGES):
            result = await client.list_resource_templates(cursor=cursor, cache_mode="bypass")
            templates += [
                {"uriTemplate": t.uri_template, "name": t.name, "mimeType": t.mime_type}
                for t in result.resource_templates
            ]
            cursor = result.next_cursor
            if not cursor:
                break
        else:
            raise SystemExit("resources/templates/list did not end")
        return {"resources": resources, "templates": templates}


def main() -> None:
    argv = sys.argv[1:]
    if len(argv) == 2 and argv[0] == "--url":
        target: Any = argv[1]
    elif len(argv) >= 2 and argv[0] == "--stdio":
        target = StdioServerParameters(command=argv[1], args=argv[2:])
    else:
        raise SystemExit(__doc__)
    print(json.dumps(anyio.run(collect, target)))


if __name__ == "__main__":
    main()
