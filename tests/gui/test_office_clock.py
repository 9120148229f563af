"""LibreOffice's movable clock (``sandboxes/desktop/officeclock``): reset runs LibreOffice's timers after a document
load by moving its clock instead of waiting, and the screen it then shows is the one a real wait gives.

The first test runs the image's library in a process that calls itself ``soffice.bin`` (the only name it acts in):
the clocks move by the shared offset, and a wait with an absolute deadline read off a moved clock lasts what it
asked for, not the offset more.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess

import pytest

from envgym.sandbox import tag_for
from envgym_gui._samples import odf

pytestmark = pytest.mark.docker
RUN_ID = f"pytest-gui-clock-{secrets.token_hex(4)}"

PROBE = r"""
import json, mmap, os, struct, threading, time
tai = lambda: time.clock_gettime(time.CLOCK_TAI)  # a clock the library leaves alone
before = (time.time(), time.monotonic(), tai())
fd = os.open(os.environ["CLOCK_FILE"], os.O_RDWR | os.O_CREAT)  # the library made it, if it acts here
os.ftruncate(fd, 24)
with mmap.mmap(fd, 24) as shared:
    struct.pack_into("<q", shared, 0, 5_000_000_000)
after = (time.time(), time.monotonic(), tai())
start = tai()
threading.Event().wait(0.3)  # a semaphore wait with an absolute deadline on the monotonic clock
waited = tai() - start
print(json.dumps({"realtime": after[0] - before[0], "monotonic": after[1] - before[1], "tai": after[2] - before[2],
                  "waited": waited, "preload": os.environ.get("ENVGYM_OFFICE_CLOCK")}))
"""


def _probe(name: str) -> dict:
    script = (f'CLOCK_FILE=/tmp/clock; export CLOCK_FILE; LD_PRELOAD=/usr/local/lib/envgym/officeclock.so '
              f'ENVGYM_OFFICE_CLOCK=/tmp/clock exec -a {name} python3 -c "$PROBE"')
    done = subprocess.run(["docker", "run", "--rm", "--network", "none", "-e", f"PROBE={PROBE}", tag_for("desktop"),
                           "bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_clock_moves_in_soffice_only_and_no_wait_grows_by_it():
    moved = _probe("soffice.bin")
    assert moved["realtime"] > 4.9 and moved["monotonic"] > 4.9  # both clocks LibreOffice reads
    assert moved["tai"] < 1.0  # the others stay
    assert 0.25 < moved["waited"] < 2.0  # not 5.3 s: the deadline is given back to the kernel on its own clock
    assert moved["preload"] is None  # LibreOffice's children keep their own clocks

    elsewhere = _probe("python3")  # any other process: the library is inert
    assert elsewhere["realtime"] < 1.0 and elsewhere["monotonic"] < 1.0


def _ods() -> bytes:
    rows = "".join(f"<table:table-row><table:table-cell office:value-type=\"float\" office:value=\"{i}\"/>"
                   "</table:table-row>" for i in range(1, 6))
    return odf("application/vnd.oasis.opendocument.spreadsheet",
               f"<office:spreadsheet><table:table table:name=\"Sheet1\">{rows}</table:table></office:spreadsheet>")


async def test_moving_the_clock_shows_the_screen_that_waiting_shows(desktop):
    path = "/home/user/Documents/numbers.ods"
    await desktop.write_files({path: _ods()})
    await desktop.launch("calc", path, timeout=180)
    await desktop.wait_window(r"numbers\.ods - LibreOffice Calc", timeout=180, settle=0)

    nothing = await desktop.office_fast_forward(budget_ms=0)
    assert nothing["clock"] is True and nothing["moved_ms"] == 0 and nothing["timers"] == 0

    ran = await desktop.office_fast_forward(budget_ms=2000)
    assert ran["clock"] is True and ran["moved_ms"] > 0 and ran["timers"] > 0
    assert ran["stopped"] != "timeout"  # it ended because LibreOffice stayed asleep with nothing due
    first = await desktop.still_screenshot(quiet=0.15, timeout=30, strict=True)
    assert first is not None

    await asyncio.sleep(3)  # what the timers would have drawn in real time, and more
    assert await desktop.still_screenshot(quiet=0.5, timeout=30, strict=True) == first
