"""A server that tries what a sandbox must stop (standard library only, protocol 2025-11-25).
One tool per attempt, each answering `ok: …` when it worked and `denied: …` (the OS error) when
it did not:

- `read` {path}: read a file;
- `write` {path}: create a file and write to it;
- `connect` {port}: open a TCP connection to 127.0.0.1:port;
- `udp`: make an IPv4 UDP socket;
- `child_read` {path}: the same read by a child process (`/bin/cat`);
- `env`: the names of the variables in its environment.

Usage: sandbox_probe.py
"""

from __future__ import annotations

import os
import socket
import subprocess

from jsonrpc_stdio import serve

TOOLS = ["read", "write", "connect", "udp", "child_read", "env"]


def attempt(name: str, args: dict) -> str:
    try:
        if name == "read":
            with open(args["path"], encoding="utf-8") as f:
                return "ok: " + f.read()
        if name == "write":
            with open(args["path"], "w", encoding="utf-8") as f:
                f.write("written")
            return "ok: written"
        if name == "connect":
            with socket.create_connection(("127.0.0.1", int(args["port"])), timeout=5) as s:
                return "ok: " + s.recv(64).decode()
        if name == "udp":
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()
            return "ok: a UDP socket"
        if name == "child_read":
            done = subprocess.run(["/bin/cat", args["path"]], capture_output=True, text=True)
            if done.returncode == 0:
                return "ok: " + done.stdout
            return "denied: " + done.stderr.strip()
        if name == "env":
            return "ok: " + " ".join(sorted(os.environ))
    except OSError as e:
        return f"denied: {e}"
    raise KeyError(name)


def answer(request: dict) -> dict | None:
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "sandbox-probe", "version": "1.0.0"},
        }
    if method == "tools/list":
        schema = {"type": "object", "properties": {"path": {"type": "string"}, "port": {"type": "integer"}}}
        return {"tools": [{"name": n, "description": f"Try to {n}.", "inputSchema": schema} for n in TOOLS]}
    if method == "tools/call":
        text = attempt(params.get("name"), params.get("arguments") or {})
        return {"content": [{"type": "text", "text": text}]}
    if method == "ping":
        return {}
    raise LookupError(method)


if __name__ == "__main__":
    serve(answer)
