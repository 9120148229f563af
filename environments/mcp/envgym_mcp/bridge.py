"""The in-sandbox end of a ChannelTransport: a sandbox channel in front of an MCP stdio server.

Standard library only (it runs inside the sandbox's image). Started as ``python3 bridge.py ARGV...``: it
starts ARGV with pipes, says ``{"hello": <pid>}`` (the channel protocol of :mod:`envgym.sandbox.base`), then
answers each request line ``{"send": <JSON-RPC message>}`` with one line: ``{"ok": true, "reply": <the
response with that id>}`` for a request, ``{"ok": true}`` for a notification, ``{"ok": false, "error": ...}``
when the server has exited. Lines the server writes that answer nothing (its notifications) are dropped.
"""

import json
import os
import subprocess
import sys


def main():
    server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    print(json.dumps({"hello": os.getpid()}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)["send"]
        try:
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
        except BrokenPipeError:
            print(json.dumps({"ok": False, "error": f"the server exited (code {server.wait()})"}), flush=True)
            continue
        if "id" not in message:
            print(json.dumps({"ok": True}), flush=True)
            continue
        while True:
            out = server.stdout.readline()
            if not out:
                print(json.dumps({"ok": False, "error": f"the server exited (code {server.wait()})"}), flush=True)
                break
            try:
                reply = json.loads(out)
            except ValueError:
                continue
            if isinstance(reply, dict) and reply.get("id") == message["id"] and ("result" in reply or "error" in reply):
                print(json.dumps({"ok": True, "reply": reply}), flush=True)
                break
    server.stdin.close()
    server.wait()


if __name__ == "__main__":
    main()
