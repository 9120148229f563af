"""The in-sandbox end of a ChannelTransport: a sandbox channel in front of an MCP stdio server.

Standard library only (it runs inside the sandbox's image). Started as ``python3 bridge.py MAX_BYTES ARGV...``:
it starts ARGV with pipes, says ``{"hello": <pid>}`` (the channel protocol of :mod:`envgym.sandbox.base`), then
answers each request line ``{"line": <one JSON-RPC message, as a string>, "id": <its id>}`` with one line:
``{"ok": true, "reply": <the line of the response with that id, as a string>}`` for a request (no ``id``: a
notification, ``{"ok": true}``), ``{"ok": true, "dropped": <why>}`` when the server's next line is over
MAX_BYTES (read past in pieces, never held whole) or nests too deeply to decode, ``{"ok": false, "error": ...}``
when the server has exited. Other lines the server writes (its notifications, stray prints) are dropped. The
reply travels as a string, so no nesting ever reaches the channel's JSON.
"""

import json
import os
import subprocess
import sys


def readline(stream, limit):
    """The next line (b"" at the end), or None when it is longer than ``limit`` (what follows is read past)."""
    line = stream.readline(limit + 1)
    if len(line) <= limit or line.endswith(b"\n"):
        return line
    while line and not line.endswith(b"\n"):
        line = stream.readline(1 << 20)
    return None


def answer(server, limit, wanted):
    """The reply to request ``wanted`` as the bridge's answer."""
    while True:
        out = readline(server.stdout, limit)
        if out is None:
            return {"ok": True, "dropped": f"is over the {limit >> 20} MiB one MCP message may be here"}
        if not out:
            return {"ok": False, "error": f"the server exited (code {server.wait()})"}
        try:
            reply = json.loads(out)
        except RecursionError:
            return {"ok": True, "dropped": "nests too deeply to decode"}
        except ValueError:
            continue
        if isinstance(reply, dict) and reply.get("id") == wanted and ("result" in reply or "error" in reply):
            return {"ok": True, "reply": out.decode("utf-8", "replace")}


def say(message):
    sys.stdout.buffer.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
    sys.stdout.buffer.flush()


def main():
    limit = int(sys.argv[1])
    server = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    say({"hello": os.getpid()})
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            server.stdin.write(request["line"].encode() + b"\n")
            server.stdin.flush()
        except BrokenPipeError:
            say({"ok": False, "error": f"the server exited (code {server.wait()})"})
            continue
        reply = answer(server, limit, request["id"]) if "id" in request else {"ok": True}
        say(reply)
    server.stdin.close()
    server.wait()


if __name__ == "__main__":
    main()
