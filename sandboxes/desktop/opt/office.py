"""LibreOffice's own signals, read by the user's daemon (``desktopd.py user``) in LibreOffice's process: its
single-instance pipe (a document handed to the running LibreOffice, and its answer that it is loaded), its
main thread's sleep (``/proc/PID/syscall``: asleep in its main loop's poll, and its next timer), and its
movable clock (``officeclock.c``: the timers after a load run without their waits). Standard library only;
run as the desktop's user, whose LibreOffice it reads.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import socket
import struct
import time
from collections.abc import Callable

SHARED = struct.Struct("<qqq")
"""officeclock.c's ``struct shared``: the clock's offset (ns; written here only), the main loop's poll deadline on
the moved monotonic clock (0 when none), main-loop polls entered so far."""


MOVES = 3
"""At most this many budgets in all, however often LibreOffice wakes on its own (an animation would never end)."""


class Timeout(Exception):
    """LibreOffice did not answer within the time given."""


class Refused(Exception):
    """LibreOffice answered, but not that it did what it was asked."""


PIPES = f"/tmp/OSL_PIPE_{os.getuid()}_SingleOfficeIPC_*"
"""The running LibreOffice's single-instance pipe (a Unix socket), the one ``soffice FILE`` itself hands its
arguments to when an instance already runs."""


def hand_over(args: list[str], timeout: float, *, home: str) -> bool:
    """Give the running LibreOffice ``args`` (as a second ``soffice`` would) and wait for its answer that it
    processed them: for a document, that it is loaded and its window shown. This saves starting a second
    ``soffice`` (oosplash, soffice.bin, its libraries) only to pass the arguments on, and it is LibreOffice's
    own signal that the document is open. Its protocol (desktop/app/officeipcthread): the server greets with
    ``InternalIPC::SendArguments``, the client sends ``InternalIPC::Arguments`` + ``1`` + the working
    folder's URL + ``,arg`` for each argument (``\\``, ``,`` and NUL escaped), NUL-terminated; the server
    answers ``InternalIPC::ProcessingDone`` once done. False when no instance answers (the caller starts
    ``soffice`` itself). :class:`Timeout` when it did not answer within ``timeout``, :class:`Refused` when it
    answered otherwise."""
    import glob

    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("\0", "\\0").replace(",", "\\,")

    def read_until_nul(conn: socket.socket) -> bytes:
        data = b""
        while not data.endswith(b"\0"):
            chunk = conn.recv(256)
            if not chunk:
                break
            data += chunk
        return data

    for path in glob.glob(PIPES):
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(10)
            try:
                conn.connect(path)
                if read_until_nul(conn) != b"InternalIPC::SendArguments\0":
                    continue
                message = "InternalIPC::Arguments1" + escape(f"file://{home}") + "".join(f",{escape(a)}" for a in args)
                conn.sendall(message.encode() + b"\0")
                conn.settimeout(timeout)
                answer = read_until_nul(conn)
            except TimeoutError:
                raise Timeout(f"LibreOffice did not load {args[-1:]} within {timeout} s") from None
            except OSError:  # a stale pipe of an office that ended
                continue
        if answer == b"InternalIPC::ProcessingDone\0":
            return True
        raise Refused(f"LibreOffice did not process {args}: it answered {answer[:80]!r}")
    return False


def pid() -> int | None:
    """This user's running ``soffice.bin`` (LibreOffice's process; its main thread's id is its pid)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() == "soffice.bin" and os.stat(f"/proc/{entry}").st_uid == os.getuid():
                    return int(entry)
        except OSError:
            continue
    return None


POLL_SYSCALL = "7"
"""poll(2)'s number on x86-64, the call LibreOffice's main loop (GLib's) sleeps in."""


def main_loop_wait(pid: int) -> tuple[str, int] | None:
    """What LibreOffice's main thread sleeps in: ``(its /proc syscall line, the poll timeout in ms, -1 for
    none)``; None while it runs or waits on anything but its main loop's poll."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            line = f.read().strip()
    except OSError:
        return None
    fields = line.split()
    # the main loop polls its wakeup fd, the X connection and more; a poll of one fd is Xlib/xcb waiting for
    # the X server's reply in the middle of handling something (timeout -1 too)
    if len(fields) < 4 or fields[0] != POLL_SYSCALL or int(fields[2], 16) < 2:
        return None
    timeout = int(fields[3], 16) & 0xFFFFFFFF
    return line, -1 if timeout >= 0x80000000 else timeout


def thread_state(pid: int, tid: int) -> str | None:
    """A thread's state letter (``R`` runnable, ``S`` asleep, ...), None once it ended."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2]
    except (OSError, ValueError, IndexError):
        return None


def quiet(timeout: float, horizon: int, hold: float, *, runnable: Callable[[], bool]) -> dict:
    """Wait until LibreOffice has nothing due: its main thread asleep in its main loop's poll with no timer
    due within ``horizon`` ms (or none at all) and none of the user's threads runnable (``runnable``), the same
    sleep for ``hold`` seconds. After a document loads, LibreOffice updates its toolbar states, ruler and
    status bar from timers (a few hundred ms, then 20 ms steps) and idle handlers; on a loaded host they come
    late, after any fixed settle. The poll's timeout is its next timer, read from ``/proc/PID/syscall`` (the
    user's own process). ``{"quiet": false}`` when ``timeout`` passed first or no LibreOffice runs."""
    started = time.monotonic()
    main = pid()
    last, since = None, started
    while main is not None and time.monotonic() - started < timeout:
        wait = main_loop_wait(main)
        now = time.monotonic()
        if wait is None or 0 <= wait[1] < horizon or runnable():
            last = None
        elif wait[0] != last:
            last, since = wait[0], now
        elif now - since >= hold:
            return {"quiet": True, "seconds": round(now - started, 3), "next_timer_ms": wait[1]}
        time.sleep(0.01)
    return {"quiet": False, "seconds": round(time.monotonic() - started, 3)}

def fast_forward(clock: str, budget_ns: int, timeout: float, *, runnable: Callable[[], bool],
                 quiet: float = 0.1, trace: bool = False) -> dict:
    """Run LibreOffice's timers due within ``budget_ns`` of its clock now, without waiting for them: each time
    its main thread sleeps in its main loop's poll with a timer due and nothing else in flight (``runnable()``
    false: none of the user's threads runnable, the X server included; the same sleep seen twice), move its
    clock (officeclock.c, shared through the file ``clock``) to that timer's deadline and wake it. Timers run
    in their order and at their clock readings, whatever the host's load; real events (X, D-Bus) are all
    handled before the clock moves, and one that wakes LibreOffice starts the budget again. Done once it has
    slept ``quiet`` seconds (wall clock) with no timer due within the budget, or after ``timeout`` seconds.
    ``{"moved_ms": how far the clock moved, "timers": how many were run, "stopped": why, "seconds": the wall
    time}`` (with ``trace``, also each timer run and each waking of its own); ``"clock": false`` when
    LibreOffice runs without the movable clock (nothing was waited for)."""
    started = time.monotonic()
    main = pid()
    if main is None or not os.path.exists(clock):
        return {"clock": False, "moved_ms": 0, "timers": 0, "seconds": 0.0}
    with open(clock, "r+b") as f, mmap.mmap(f.fileno(), SHARED.size) as shared:
        wake = os.open(clock + ".wake", os.O_WRONLY | os.O_NONBLOCK)
        try:
            return _fast_forward(main, shared, wake, budget_ns, quiet, started, timeout, runnable,
                                 [] if trace else None)
        finally:
            os.close(wake)


def _fast_forward(main: int, shared: mmap.mmap, wake: int, budget_ns: int, quiet: float, started: float,
                  timeout: float, runnable: Callable[[], bool], trace: list | None) -> dict:
    moved, timers, last = 0, 0, None
    since = 0  # the clock's move when LibreOffice last woke on its own: the budget counts from there
    seen, woken = None, False  # the main loop's polls when last seen asleep, and whether this woke it since
    idle_since = None  # since when it sleeps with nothing due within the budget (wall clock)
    reason = "timeout"
    while time.monotonic() - started < timeout:
        wait = main_loop_wait(main)
        if wait is None or thread_state(main, main) != "S" or runnable():
            last = idle_since = None
            time.sleep(0.001)
            continue
        offset, deadline, polls = SHARED.unpack_from(shared, 0)
        if seen is not None and polls != seen and not woken:  # an X or D-Bus event, or a timer in real time
            since, idle_since = moved, None
            if trace is not None:
                trace.append(("real", round(moved / 1e6, 1), polls - seen))
        woken = woken and polls == seen
        seen = polls
        if (wait[0], polls) != last:  # not yet seen twice: a poll just entered, an event may be on its way
            last = (wait[0], polls)
            time.sleep(0.002)
            continue
        step = max(0, deadline - (time.monotonic_ns() + offset)) + 1_000_000  # just past the deadline
        if wait[1] >= 0 and deadline and moved - since + step <= budget_ns and moved + step <= MOVES * budget_ns:
            struct.pack_into("<q", shared, 0, offset + step)  # the offset alone: the library writes the rest
            if trace is not None:
                trace.append(("timer", wait[1], round(step / 1e6, 1)))
            moved, timers, last, woken, idle_since = moved + step, timers + 1, None, True, None
            with contextlib.suppress(BlockingIOError):
                os.write(wake, b"w")
            continue
        # nothing due within the budget: done once it stays so (a thread of LibreOffice's sleeping in real time,
        # a late event from another process, wakes it meanwhile and the budget starts again)
        now = time.monotonic()
        if idle_since is None:
            idle_since = now
        elif now - idle_since >= quiet:
            reason = "no timer" if wait[1] < 0 or not deadline else f"next timer {wait[1]} ms"
            break
        time.sleep(0.002)
    out = {"clock": True, "moved_ms": round(moved / 1e6, 1), "timers": timers, "stopped": reason,
           "seconds": round(time.monotonic() - started, 3)}
    if trace is not None:
        out["trace"] = trace
    return out


def caught_up(timeout: float) -> dict:
    """Wait until LibreOffice has handled the input sent so far: its main thread asleep (not runnable) in
    its main loop's poll with a timeout other than 0, twice in a row. LibreOffice runs a shortcut
    (``ctrl+End``: ``.uno:GoToEndOfDoc``) from a user event it posts to itself, after the key press
    returns; a key that arrives before that event ran (a CPU-starved LibreOffice reads the X events
    queued meanwhile in one go) is handled first: ``ctrl+End Return`` then split the document's first
    paragraph and moved to the end only after. Pending work (user events, idle handlers, X events)
    makes its poll return at once (timeout 0) or keeps the thread runnable. ``{"caught_up": true}``
    also when no LibreOffice runs; false when ``timeout`` passed first."""
    started = time.monotonic()
    main = pid()
    last = None
    while main is not None and time.monotonic() - started < timeout:
        wait = main_loop_wait(main)
        asleep = wait is not None and wait[1] != 0 and thread_state(main, main) == "S"
        if asleep and wait[0] == last:
            return {"caught_up": True, "seconds": round(time.monotonic() - started, 3)}
        last = wait[0] if asleep else None
        time.sleep(0.005)
    return {"caught_up": main is None, "seconds": round(time.monotonic() - started, 3)}
