"""A misbehaving MCP stdio server for the McpToolEnv tests (standard library only, so it runs in any sandbox).

Tools: ``dump`` writes ``mib`` MiB into a new file of its folder (``dump-N.bin``, one write per MiB); ``big``
answers with a text of ``mib`` MiB; ``deep`` answers with structured content nested ``depth`` deep (the server
raises its own recursion limit to build and encode it); ``ping`` answers ``pong``.
"""

import json
import os
import sys

sys.setrecursionlimit(200_000)
TOOLS = [{"name": name, "description": name, "inputSchema": {"type": "object", "properties": {}}}
         for name in ("dump", "big", "deep", "ping")]


def call(name, args):
    if name == "dump":
        index = len([f for f in os.listdir(".") if f.startswith("dump-")])
        with open(f"dump-{index}.bin", "wb") as out:
            for _ in range(int(args.get("mib", 1))):
                out.write(b"x" * (1 << 20))
        return {"content": [{"type": "text", "text": f"wrote dump-{index}.bin"}]}
    if name == "big":
        return {"content": [{"type": "text", "text": "y" * int(args.get("mib", 1) * (1 << 20))}]}
    if name == "deep":
        nested = []
        for _ in range(int(args.get("depth", 10))):
            nested = [nested]
        return {"content": [], "structuredContent": {"nested": nested}}
    return {"content": [{"type": "text", "text": "pong"}]}


def main():
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                      "serverInfo": {"name": "toy", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        else:
            result = call(params.get("name"), params.get("arguments") or {})
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
