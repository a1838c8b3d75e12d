"""The hand-spoken fixtures' one loop: newline-delimited JSON-RPC on stdin/stdout, standard
library only. `serve(answer)` answers each request with `answer(request)`'s result (`None`: the fixture
wrote its answer itself); a `KeyError` becomes -32602 (not found), a `LookupError` -32601 (no
such method).
Notifications are read and ignored."""

from __future__ import annotations

import json
import sys
from typing import Callable


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve(answer: Callable[[dict], dict]) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue
        reply: dict = {"jsonrpc": "2.0", "id": request["id"]}
        try:
            result = answer(request)
            if result is None:
                continue  # the fixture wrote its answer itself
            reply["result"] = result
        except KeyError as e:
            reply["error"] = {"code": -32602, "message": f"Resource not found: {e.args[0]}"}
        except LookupError as e:
            reply["error"] = {"code": -32601, "message": f"Method not found: {e.args[0]}"}
        send(reply)
