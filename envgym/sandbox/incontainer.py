"""The helper that runs *inside* a sandbox: a persistent session server, tree kill and OOM counting.

It is sent as the source of ``python3 -c`` (nothing is installed in the image, so it works on read-only
roots) and must stay standard-library only, Python 3.11 (Debian bookworm's). Modes::

    python3 -c SRC serve        JSON lines on stdin -> JSON lines on stdout, one request at a time
    python3 -c SRC kill TOKEN   stop, then SIGKILL, every process carrying ENVGYM_EXEC=TOKEN and its descendants
    python3 -c SRC oom          print the container's OOM-kill counter (cgroup v1 or v2)

A command is tagged with ``ENVGYM_EXEC=<token>`` in its environment; the tag is inherited by everything it
starts (``&``, ``setsid``, double forks), and a descendant that clears its environment is still found through
its parent. That is how a timeout kills "the whole tree" without touching PID 1, the keeper or the session.
The local backend imports :func:`kill_tree` from here for the same job on the host.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import selectors
import signal
import subprocess
import sys
import tarfile
import time

TAG = "ENVGYM_EXEC"
CHUNK = 65536


def _processes() -> dict[int, int]:
    """pid -> ppid for every visible process."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # comm may hold spaces and parentheses: the fields after the last ')' are fixed.
        table[int(name)] = int(stat[stat.rindex(b")") + 2:].split()[1])
    return table


def find_tree(token: str) -> set[int]:
    marker = f"{TAG}={token}".encode()
    table = _processes()
    found = set()
    for pid in table:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    found.add(pid)
        except OSError:
            continue
    grew = True
    while grew:  # descendants, whether or not they kept the tag
        grew = False
        for pid, ppid in table.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    found.discard(os.getpid())
    return found


def kill_tree(token: str, rounds: int = 200, group: int | None = None) -> int:
    """Kill the tagged tree; returns how many processes were hit.

    First every process group led by a member (``group`` too) gets SIGKILL in one call each, which stops a
    fork bomb at once; then the rest of the tree is frozen (SIGSTOP) until no new member appears, and killed.
    """
    if group:  # before any scan: in a starved container (fork bomb) a scan of /proc takes seconds
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    leaders = set()
    for pid in find_tree(token):
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                leaders.add(pid)
    for pgid in leaders:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    stopped: set[int] = set()
    for _ in range(rounds):
        new = find_tree(token) - stopped
        if not new:
            break
        for pid in new:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        stopped |= new
    for pid in stopped:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return len(stopped)


def oom_kills() -> int:
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except OSError:
            continue
    return 0


def _ids(user: str) -> tuple[int, int]:
    import pwd

    name, _, group = user.partition(":")
    entry = None
    if name.isdigit():
        uid = int(name)
    else:
        entry = pwd.getpwnam(name)
        uid = entry.pw_uid
    if group:
        return uid, int(group)
    if entry is None:
        try:
            entry = pwd.getpwuid(uid)
        except KeyError:
            return uid, uid
    return uid, entry.pw_gid


def run(req: dict) -> dict:
    cmd = req["cmd"]
    argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
    env = dict(os.environ)
    env.update(req.get("env") or {})
    env[TAG] = req["token"]
    cap = int(req.get("max_output", 1 << 20))
    kwargs = {}
    if req.get("user"):
        uid, gid = _ids(req["user"])
        kwargs = {"user": uid, "group": gid, "extra_groups": []}
    ooms = oom_kills()
    start = time.monotonic()
    deadline = start + float(req.get("timeout", 60))
    try:
        proc = subprocess.Popen(argv, cwd=req.get("cwd") or None, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kwargs)
    except OSError as exc:
        return {"ok": True, "exit_code": 127, "stdout": "", "truncated": False, "timed_out": False,
                "oom_killed": False, "stderr": base64.b64encode(f"{argv[0]}: {exc}\n".encode()).decode()}
    stdout_fd, stderr_fd = proc.stdout.fileno(), proc.stderr.fileno()
    out = {stdout_fd: bytearray(), stderr_fd: bytearray()}
    sel = selectors.DefaultSelector()
    for fd in out:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    truncated = timed_out = False
    while sel.get_map():
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            kill_tree(req["token"], group=proc.pid)  # start_new_session: the command leads its own group
            break
        exited = proc.poll() is not None
        # Once the command has exited, background children may hold the pipes open: drain briefly, stop.
        events = sel.select(min(deadline - now, 0.05) if exited else deadline - now)
        if not events and exited:
            break
        for key, _ in events:
            data = os.read(key.fd, CHUNK)
            if not data:
                sel.unregister(key.fd)
                continue
            buf = out[key.fd]
            room = cap - len(buf)
            if len(data) > room:
                truncated = True
            buf += data[:max(room, 0)]
    sel.close()
    code = proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    return {"ok": True, "exit_code": None if timed_out else (128 - code if code < 0 else code),
            "stdout": base64.b64encode(bytes(out[stdout_fd])).decode(),
            "stderr": base64.b64encode(bytes(out[stderr_fd])).decode(),
            "truncated": truncated, "timed_out": timed_out,
            "oom_killed": code in (-signal.SIGKILL, 128 + signal.SIGKILL) and oom_kills() > ooms,
            "oom_count": oom_kills()}


def write(req: dict) -> dict:
    path = req["path"]
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(base64.b64decode(req["data"]))
    os.chmod(path, int(req.get("mode", 0o644)))
    return {"ok": True}


def read(req: dict) -> dict:
    with open(req["path"], "rb") as f:
        data = f.read(int(req["max_bytes"]) + 1)
    if len(data) > int(req["max_bytes"]):
        raise ValueError(f"{req['path']} is larger than {req['max_bytes']} bytes")
    return {"ok": True, "data": base64.b64encode(data).decode()}


def tar_out(req: dict) -> dict:
    path = req["path"].rstrip("/") or "/"
    os.lstat(path)  # FileNotFoundError when missing; a link is archived as a link, never followed
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(path, arcname=os.path.basename(path) or "root", recursive=True)
    if buf.tell() > int(req["max_bytes"]):
        raise ValueError(f"{path} archives to more than {req['max_bytes']} bytes")
    return {"ok": True, "data": base64.b64encode(buf.getvalue()).decode()}


def tar_in(req: dict) -> dict:
    os.makedirs(req["dest"], exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(req["data"]))) as tar:
        tar.extractall(req["dest"])  # the archive comes from the host, which trusts itself
    return {"ok": True}


OPS = {"run": run, "write": write, "read": read, "tar_out": tar_out, "tar_in": tar_in,
       "oom": lambda req: {"ok": True, "count": oom_kills()},
       "ping": lambda req: {"ok": True, "pid": os.getpid(), "uid": os.getuid()}}


def serve() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    for line in sys.stdin.buffer:
        req = json.loads(line)
        try:
            reply = OPS[req["op"]](req)
        except Exception as exc:  # every failure goes back to the host, typed by name
            reply = {"ok": False, "kind": type(exc).__name__, "error": str(exc)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "serve":
        serve()
    elif mode == "kill":
        print(kill_tree(sys.argv[2]))
    elif mode == "oom":
        print(oom_kills())
