"""A Python SDK (mcp==2.3.0) `MCPServer` for mcp-router's protocol-era tests. It speaks both
eras (the SDK decides per connection from the client's first request) and serves:
- `meta()`: a tool answering with what *this server* saw: the protocol version the request's
  `_meta` carried (`io.modelcontextprotocol/protocolVersion`) and the negotiated one;
- `greet()`: a tool that needs the user's name (an elicitation: an `input_required` answer in
  2026-07-28, a server-to-client request in 2025-11-25);
- `secret://{key}`: a template resource that needs the user's name before it answers (2026-07-28
  only, as the SDK allows input requests on template reads);
- `era://hello`: a plain text resource;
- `touch(uri)`: publishes a resource update of `uri` to `subscriptions/listen` streams;
- `chatty()`: logs one message at `debug`, `info` and `warning` (logger "era"), reporting progress
  after each (1, 2, 3 of 3, "after <level>"); in 2026-07-28 the SDK sends only the log messages
  at or above the level the request's `_meta` asks for, none without one.

`--modern-only` (http): refuse the 2025-11-25 lifecycle the way a server that only speaks
2026-07-28 does: `initialize` gets HTTP 400 with UNSUPPORTED_PROTOCOL_VERSION, GET and DELETE 405.

Usage: era_fixture.py stdio | http [--modern-only]   (http: 127.0.0.1, URL on stdout)
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    Resolve,
)
from pydantic import BaseModel

import loopback_http

PROTOCOL_KEY = "io.modelcontextprotocol/protocolVersion"

server = MCPServer("py-era", version="1.0.0")


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
def meta(ctx: Context) -> str:
    """What this server saw on this request: the _meta protocol version and the negotiated one."""
    request_meta: dict[str, Any] = dict(ctx.request_context.meta or {})
    return json.dumps({"meta": request_meta.get(PROTOCOL_KEY), "negotiated": ctx.protocol_version})


@server.tool()
def greet(who: Annotated[ElicitationResult[Name], Resolve(ask_name)]) -> str:
    """Greet the user (asks for their name)."""
    if isinstance(who, AcceptedElicitation):
        return f"Hello, {who.data.name}!"
    return f"no name given ({who.action})"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Tell subscribed clients that `uri` changed (on their subscriptions/listen streams)."""
    await ctx.notify_resource_updated(uri)
    return f"published an update of {uri}"


@server.tool()
async def chatty(ctx: Context) -> str:
    """Log one message at debug, info and warning."""
    for step, level in enumerate(("debug", "info", "warning"), start=1):
        await ctx.log(level, f"{level} message", logger_name="era")
        await ctx.report_progress(step, 3, f"after {level}")
    return "logged"


@server.resource("era://hello", name="hello", mime_type="text/plain")
def hello() -> str:
    return "hello from both eras"


@server.resource("secret://{key}", name="secret", mime_type="text/plain")
def secret(key: str, ctx: Context) -> Any:
    answer = (ctx.input_responses or {}).get("name")
    if answer is None:
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=f"Who is reading secret {key}?",
                requested_schema={
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            )
        )
        return types.InputRequiredResult(input_requests={"name": request}, request_state=key)
    # The SDK hands the answer over parsed (an ElicitResult).
    if answer.action != "accept":
        return f"secret {key}: withheld ({answer.action})"
    return f"secret {key} for {(answer.content or {}).get('name')}"


def modern_only(app: Any) -> Any:
    """ASGI middleware: refuse what only the 2025-11-25 lifecycle uses."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["method"] in ("GET", "DELETE"):
            await _reply(send, 405, b"")
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if isinstance(request, dict) and request.get("method") == "initialize":
            error = {
                "jsonrpc": "2.0",
                "id": request.get("id"),
                "error": {
                    "code": -32022,
                    "message": "This server only speaks protocol 2026-07-28",
                    "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"},
                },
            }
            await _reply(send, 400, json.dumps(error).encode(), "application/json")
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, replay, send)

    return guarded


async def _reply(send: Any, status: int, body: bytes, content_type: str = "text/plain") -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    args = sys.argv[1:]
    if args == ["stdio"]:
        server.run("stdio")
    elif args and args[0] == "http" and set(args[1:]) <= {"--modern-only"}:
        app = server.streamable_http_app(host="127.0.0.1")
        if "--modern-only" in args:
            app = modern_only(app)
        anyio.run(loopback_http.serve, app)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
