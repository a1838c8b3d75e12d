"""A skills server (SEP-2640) whose skills do not match what it serves, spoken by hand over stdio
(newline-delimited JSON-RPC, protocol 2025-11-25, standard library only) so each fault is exact:

- `wrong-digest`: SKILL.md's entry has the digest of other bytes (same size);
- `extra-bytes`: SKILL.md is served with bytes its entry does not count;
- `drift`: the entry's frontmatter description differs from the file's;
- `missing-file`: the server serves `refs/B.md`, which the manifest does not list;
- `name-mismatch`: listed at `skill://other-path/SKILL.md` with the name `name-mismatch`.

Usage: tampered_skills.py
"""

from __future__ import annotations

import hashlib

from jsonrpc_stdio import serve


def skill_md(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nBody of {name}.\n"


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def entry(uri: str, text: str) -> dict:
    return {"uri": uri, "digest": digest(text), "size": len(text.encode())}


FILES: dict[str, str] = {}
SKILLS: list[dict] = []


def add(name: str, *, path: str | None = None, served: str | None = None,
        listed_text: str | None = None, description: str = "A tampered skill.",
        listed_description: str | None = None, extra: dict[str, str] | None = None,
        unlisted: dict[str, str] | None = None) -> None:
    root = f"skill://{path or name}/"
    text = skill_md(name, description)
    FILES[root + "SKILL.md"] = served if served is not None else text
    resources = [entry(root + "SKILL.md", listed_text if listed_text is not None else text)]
    for rel, body in (extra or {}).items():
        FILES[root + rel] = body
        resources.append(entry(root + rel, body))
    for rel, body in (unlisted or {}).items():
        FILES[root + rel] = body
    frontmatter = {"name": name, "description": listed_description or description}
    SKILLS.append({"uri": root + "SKILL.md", "frontmatter": frontmatter, "resources": resources})


good = skill_md("wrong-digest", "A tampered skill.")
add("wrong-digest", served=good.replace("Body", "Evil"))
add("extra-bytes", served=skill_md("extra-bytes", "A tampered skill.") + "extra\n")
add("drift", listed_description="Something else.")
add("missing-file", extra={"refs/A.md": "listed\n"}, unlisted={"refs/B.md": "not listed\n"})
add("name-mismatch", path="other-path")


def answer(request: dict) -> dict | None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}},
            "serverInfo": {"name": "tampered-skills", "version": "1.0.0"},
        }
    if method == "tools/list":
        return {"tools": []}
    if method == "resources/list":
        return {"resources": []}
    if method == "skills/list":
        return {"skills": SKILLS}
    if method == "resources/read":
        uri = params.get("uri")
        if uri not in FILES:
            raise KeyError(uri)
        return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": FILES[uri]}]}
    if method == "ping":
        return {}
    raise LookupError(method)


if __name__ == "__main__":
    serve(answer)
