"""envgym_gui.setup.run_setup: the steps an imported OSWorld task runs in its desktop container (setup before the
first observation, postconfig before grading), each as the desktop's user; a failing step names itself. The
container side is a recording stand-in here (the real one: test_osworld_grade's desktop test)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from envgym.errors import EnvError
from envgym.sandbox.base import ExecResult
from envgym_gui.desktop import Window
from envgym_gui.setup import run_setup


@dataclass
class Desktop:
    calls: list[tuple[str, Any]] = field(default_factory=list)
    focused: bool = False

    async def launch(self, app: str, path: str | None = None) -> int:
        self.calls.append(("launch", (app, path)))
        return 7

    async def windows(self) -> list[Window]:
        return [Window(id=1, title="budget.xlsx - LibreOffice Calc", wm_class="libreoffice", pid=7,
                       focused=self.focused, x=0, y=20, w=800, h=600)]

    async def click(self, x: int, y: int) -> None:
        self.calls.append(("click", (x, y)))

    async def key(self, keys: str) -> None:
        self.calls.append(("key", keys))


@dataclass
class Sandbox:
    exit_code: int = 0
    desktop: Desktop = field(default_factory=Desktop)
    execs: list[dict[str, Any]] = field(default_factory=list)

    async def exec(self, cmd: Any, **kw: Any) -> ExecResult:
        self.execs.append({"cmd": cmd, **kw})
        return ExecResult(exit_code=self.exit_code, stdout="", stderr="mkdir: cannot create directory")


async def test_steps_run_in_the_container_as_the_user_in_order() -> None:
    box = Sandbox()
    await run_setup(box, [{"type": "execute", "command": ["mkdir", "-p", "/home/user/a b"]},
                          {"type": "execute", "command": "echo hi > ~/x.txt", "shell": True},
                          {"type": "launch", "command": ["mousepad", "/home/user/x.txt"]},
                          {"type": "open", "app": "calc", "path": "/home/user/budget.xlsx"},
                          {"type": "activate", "title": r"budget\.xlsx"}, {"type": "key", "keys": "ctrl+s"},
                          {"type": "sleep", "seconds": 0}])
    assert [e["cmd"] for e in box.execs] == [
        ["mkdir", "-p", "/home/user/a b"], ["sh", "-c", "echo hi > ~/x.txt"],
        ["sh", "-c", "setsid mousepad /home/user/x.txt >/dev/null 2>&1 </dev/null &"]]
    assert all(e["user"] == "user" and e["cwd"] == "/home/user" and e["env"]["DISPLAY"] == ":0" for e in box.execs)
    # the window was not focused: a click in its middle (a cell, no menu) focuses it before ctrl+s
    assert box.desktop.calls == [("launch", ("calc", "/home/user/budget.xlsx")), ("click", (400, 320)),
                                 ("key", "ctrl+s")]


async def test_a_focused_window_is_not_clicked() -> None:
    box = Sandbox(desktop=Desktop(focused=True))
    await run_setup(box, [{"type": "activate", "title": "budget"}, {"type": "key", "keys": "ctrl+s"}],
                    part="postconfig")
    assert box.desktop.calls == [("key", "ctrl+s")]


@pytest.mark.parametrize(("steps", "message"), [
    ([{"type": "execute", "command": ["mkdir", "/root/x"]}],
     r"initial_state.setup\[0\] \(execute\): mkdir /root/x exited 1: mkdir: cannot create directory"),
    ([{"type": "sleep"}, {"type": "download"}], r"initial_state.setup\[1\] \(download\): unknown step kind"),
    ([{"type": "execute", "command": []}], r"'command' must be a non-empty list of strings or a string"),
    (["mkdir"], r"initial_state.setup\[0\] must be an object"),
])
async def test_a_failing_or_unknown_step_is_the_envs_error_naming_it(steps, message) -> None:
    with pytest.raises(EnvError, match=message):
        await run_setup(Sandbox(exit_code=1), steps)
