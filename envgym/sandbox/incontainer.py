"""The helper that runs *inside* a sandbox: a persistent session server, the timeout kill and OOM counting.

It is sent as the source of ``python3 -c`` (nothing is installed in the image, so it works on read-only
roots) and must stay standard-library only, Python 3.11 (Debian bookworm's). Modes::

    python3 -c SRC serve                 JSON lines on stdin -> JSON lines on stdout, one request at a time;
                                         the first line is a hello: {"hello": pid}; every
                                         line carries "boottime_ns", the clock as it was written
    python3 -c SRC kill SINCE_NS KEEP    stop, then SIGKILL, every process of the container started at or
                                         after CLOCK_BOOTTIME SINCE_NS, except PID 1, the keeper and KEEP
    python3 -c SRC oom                   print the container's OOM-kill counter (cgroup v1 or v2)

**The timeout kill is a PID-namespace kill by start time** (:func:`kill_since`): when a command overruns,
every process in the container whose ``/proc/<pid>/stat`` start time is at or after the command's start
dies, whatever its parent, session, process group or environment (``setsid``, double forks, ``env -i``,
re-parenting to PID 1 cannot hide it), except PID 1 (docker-init), the keeper (PID 1's oldest child) and
envgym's own helpers, named by pid by the host (nothing the agent can forge). A cgroup kill is not
available: capabilities are dropped and cgroupfs is read-only. Chosen semantics: what an *earlier* command
left running (a server started with ``&``) survives a later command's timeout, unless it forked after that
command started (those children die); a *concurrent* command in the same sandbox started after the
timed-out one dies with it, since commands in one sandbox are meant to run one at a time.

The ``ENVGYM_EXEC`` tag walk (:func:`kill_tree`) is kept for the local backend only: on the host there is no
namespace to sweep, so a descendant that clears its environment and re-parents escapes it there.

Every ``run`` reply carries ``oom_count`` (also when the command could not start, e.g. at the pids limit)
and ``disk_full``: one of the watched mounts had no free block or inode left after the command, or its
stderr says ``No space left on device``.
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
HZ = os.sysconf("SC_CLK_TCK")
ENOSPC_WORDS = (b"No space left on device", b"Disk quota exceeded")
CONTAINER_INITS = ("docker-init", "tini", "catatonit")
"""PID 1 of a container started with ``--init`` (every envgym container is)."""


def boottime_ns() -> int:
    """The clock ``/proc/<pid>/stat`` start times count in (since boot, suspend included)."""
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)


def _stats() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, start time in clock ticks) for every visible process."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()  # comm may hold spaces and ')': what follows is fixed
        table[int(name)] = (int(fields[1]), int(fields[19]))
    return table


def kill_since(since_ns: int, keep: set[int] | frozenset[int] = frozenset(), *, group: int | None = None,
               rounds: int = 200) -> int:
    """Kill every process started at or after ``since_ns`` but PID 1, the keeper and ``keep``; returns the count.

    ``group`` (the command's own process group) is killed first in one call, which stops a fork bomb at once.
    Then in rounds until a scan finds nothing new: every match is frozen (SIGSTOP, so it cannot fork while its
    neighbours die), then killed. Rounds, not one freeze: killing a member can orphan a process group, and
    the kernel then sends SIGCONT to its stopped members. A process is named by (pid, start time), so a pid
    reused by a new process is not mistaken for a dead one. Start times have clock tick resolution: a
    process started in the same tick just before ``since_ns`` dies too.
    """
    with open("/proc/1/comm") as f:  # a sweep of the host's namespace would kill the host's processes
        if f.read().strip() not in CONTAINER_INITS:
            raise RuntimeError("kill_since sweeps a whole PID namespace: only under a container's init")
    if group:  # before any scan: in a starved container (fork bomb) a scan of /proc takes a while
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    since = since_ns * HZ // 1_000_000_000
    table = _stats()
    children_of_init = [(start, pid) for pid, (ppid, start) in table.items() if ppid == 1]
    spared = {1, os.getpid(), *keep}
    if children_of_init:
        spared.add(min(children_of_init)[1])  # the keeper: PID 1's oldest child, older than any command
    killed: set[tuple[int, int]] = set()
    for _ in range(rounds):
        new = {(pid, start) for pid, (_, start) in table.items() if start >= since and pid not in spared} - killed
        if not new:
            break
        for signum in (signal.SIGSTOP, signal.SIGKILL):
            for pid, _ in new:
                with contextlib.suppress(OSError):
                    os.kill(pid, signum)
        killed |= new
        table = _stats()
    _reaped({pid for pid, _ in killed})
    return len(killed)


def _reaped(pids: set[int], wait_s: float = 2.0) -> None:
    """Wait (briefly) until PID 1 has reaped ``pids``: until then they still count against the pids limit, and
    the next command could not start. Our own children are left to ``Popen.wait``."""
    give_up = time.monotonic() + wait_s
    while time.monotonic() < give_up:
        table = _stats()
        if not any(pid in table and table[pid][0] != os.getpid() for pid in pids):
            return
        time.sleep(0.01)


def full_mounts(paths: list[str]) -> list[str]:
    """The mounts among ``paths`` with no free block or no free inode left."""
    full = []
    for path in paths:
        try:
            st = os.statvfs(path)
        except OSError:
            continue
        if st.f_bavail == 0 or (st.f_files and st.f_favail == 0):
            full.append(path)
    return full


def find_tree(token: str) -> set[int]:
    marker = f"{TAG}={token}".encode()
    table = {pid: ppid for pid, (ppid, _) in _stats().items()}
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
    """Kill the tagged tree (the local backend's only means); returns how many processes were hit.

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
    watch = list(req.get("watch") or [])
    start = time.monotonic()
    deadline = start + float(req.get("timeout", 60))
    since = boottime_ns()
    try:
        proc = subprocess.Popen(argv, cwd=req.get("cwd") or None, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kwargs)
    except OSError as exc:  # EAGAIN at the pids limit, a missing cwd or program: a result, never a bare reply
        err = f"{argv[0]}: {exc}\n".encode()
        return {"ok": True, "exit_code": 127, "stdout": "", "truncated": False, "timed_out": False,
                "oom_killed": False, "oom_count": ooms, "stderr": base64.b64encode(err).decode(),
                "disk_full": bool(full_mounts(watch)) or any(w in err for w in ENOSPC_WORDS)}
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
            timed_out = True  # start_new_session: the command leads its own group
            kill_since(since, set(req.get("keep") or ()), group=proc.pid)
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
    after = oom_kills()
    return {"ok": True, "exit_code": None if timed_out else (128 - code if code < 0 else code),
            "stdout": base64.b64encode(bytes(out[stdout_fd])).decode(),
            "stderr": base64.b64encode(bytes(out[stderr_fd])).decode(),
            "truncated": truncated, "timed_out": timed_out,
            "oom_killed": code in (-signal.SIGKILL, 128 + signal.SIGKILL) and after > ooms, "oom_count": after,
            "disk_full": bool(full_mounts(watch)) or any(w in out[stderr_fd] for w in ENOSPC_WORDS)}


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
       "statfs": lambda req: {"ok": True, "full": full_mounts(list(req["paths"]))},
       "kill": lambda req: {"ok": True, "killed": kill_since(int(req["since_ns"]), set(req.get("keep") or ()))},
       "ping": lambda req: {"ok": True, "pid": os.getpid(), "uid": os.getuid()}}


def serve() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.write(json.dumps({"ok": True, "hello": os.getpid(), "boottime_ns": boottime_ns()}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin.buffer:
        req = json.loads(line)
        try:
            reply = OPS[req["op"]](req)
        except Exception as exc:  # every failure goes back to the host, typed by name
            reply = {"ok": False, "kind": type(exc).__name__, "error": str(exc)}
        reply["boottime_ns"] = boottime_ns()  # the host learns the container's clock from every answer
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "serve":
        serve()
    elif mode == "kill":
        print(kill_since(int(sys.argv[2]), {int(p) for p in sys.argv[3].split(",") if p}))
    elif mode == "oom":
        print(oom_kills())
