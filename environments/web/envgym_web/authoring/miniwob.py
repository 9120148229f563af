"""Generator of the ``web-miniwob`` suite: seeded MiniWoB++ instances with reference solutions.

MiniWoB++ ships no solutions. Each solver here reads one seeded instance the way an agent would (the
utterance and the simplified DOM of the first observation) and writes the action script; a seed fixes the
instance, so the script replays exactly. Building needs a browser (``python -m
envgym_web.authoring.miniwob``); the committed file is then proven by the admission gates (oracle 1,
null 0), which ``envgym check web/miniwob-v1`` and the browser tests run.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from envgym.plugin import Action, TaskSpec, write_suite
from envgym_web.authoring import act, split_of

SUITE = "web-miniwob"
Lines = list[tuple[str, str, str]]  # (element id, kind, quoted text or the rest)
_LINE = re.compile(r'^\[([^\]]+)\] (\S+) ?(.*)$')


def parse(dom: str) -> Lines:
    out = []
    for line in dom.splitlines():
        match = _LINE.match(line)
        if match:
            rest = match[3]
            quoted = re.match(r'^"((?:[^"\\]|\\.)*)"', rest)
            out.append((match[1], match[2], quoted[1] if quoted else rest))
    return out


def find(lines: Lines, kind: str, text: str | None = None) -> str:
    for element_id, k, t in lines:
        if k == kind and (text is None or t == text):
            return element_id
    raise LookupError(f"no {kind} {text!r}")


def quoted(utterance: str) -> list[str]:
    return re.findall(r'"([^"]*)"', utterance)


def _label_of(lines: Lines, kind: str) -> dict[str, str]:
    return {m[1]: eid for eid, k, rest in lines if k == "input" and f"type={kind}" in rest
            for m in [re.search(r'label="([^"]*)"', rest)] if m}


def _submit(lines: Lines) -> Action:
    return act("click", element_id=find(lines, "button", "Submit"))


def click_button(u: str, lines: Lines) -> list[Action]:
    return [act("click", element_id=find(lines, "button", quoted(u)[0]))]


def click_link(u: str, lines: Lines) -> list[Action]:
    return [act("click", element_id=find(lines, "span", quoted(u)[0]))]


def click_named(u: str, lines: Lines) -> list[Action]:
    return [act("click", element_id=find(lines, "button", name)) for name in re.findall(r"button (\w+)", u)]


def click_checkboxes(u: str, lines: Lines) -> list[Action]:
    labels = _label_of(lines, "checkbox")
    wanted = [] if "Select nothing" in u else re.match(r"Select (.*) and click Submit", u)[1].split(", ")
    return [*(act("click", element_id=labels[w]) for w in wanted), _submit(lines)]


def click_option(u: str, lines: Lines) -> list[Action]:
    choice = re.match(r"Select (.*) and click Submit", u)[1]
    return [act("click", element_id=_label_of(lines, "radio")[choice]), _submit(lines)]


def choose_list(u: str, lines: Lines) -> list[Action]:
    choice = re.match(r"Select (.*) from the list", u)[1]
    return [act("select_option", element_id=find(lines, "select"), option=choice), _submit(lines)]


def click_tab(u: str, lines: Lines) -> list[Action]:
    return [act("click", element_id=find(lines, "link", re.search(r"Tab #\d+", u)[0]))]


def enter_text(u: str, lines: Lines) -> list[Action]:
    return [act("fill", element_id=find(lines, "input"), value=quoted(u)[0]), _submit(lines)]


def enter_password(u: str, lines: Lines) -> list[Action]:
    word = quoted(u)[0]
    return [act("fill", element_id="password", value=word), act("fill", element_id="verify", value=word),
            _submit(lines)]


def login_user(u: str, lines: Lines) -> list[Action]:
    user, password = quoted(u)[:2]
    return [act("fill", element_id="username", value=user), act("fill", element_id="password", value=password),
            act("click", element_id=find(lines, "button", "Login"))]


def focus_text(u: str, lines: Lines) -> list[Action]:
    nth = re.search(r"(\d+)(?:st|nd|rd|th)", u)
    inputs = [eid for eid, k, _ in lines if k == "input"]
    return [act("click", element_id=inputs[int(nth[1]) - 1 if nth else 0])]


def arithmetic(u: str, lines: Lines) -> list[Action]:
    problem = next(t for eid, _, t in lines if eid == "math-problem")
    a, op, b = re.match(r"(-?\d+) ([+x\-]) (-?\d+)", problem).groups()
    value = {"+": int(a) + int(b), "-": int(a) - int(b), "x": int(a) * int(b)}[op]
    return [act("fill", element_id="math-answer", value=str(value)), _submit(lines)]


def click_dialog(u: str, lines: Lines) -> list[Action]:
    return [act("click", element_id=find(lines, "button", "Close"))]


SOLVERS: dict[str, Callable[[str, Lines], list[Action]]] = {
    "click-button": click_button, "click-link": click_link, "click-test": lambda u, lines: [
        act("click", element_id=find(lines, "button"))], "click-test-2": click_named,
    "click-button-sequence": click_named, "click-checkboxes": click_checkboxes, "click-option": click_option,
    "choose-list": choose_list, "click-tab": click_tab, "enter-text": enter_text, "enter-text-dynamic": enter_text,
    "enter-password": enter_password, "login-user": login_user, "focus-text": focus_text,
    "focus-text-2": focus_text, "simple-arithmetic": arithmetic, "click-dialog": click_dialog,
}
SEEDS = (1, 2)


async def _solve(page: str, seed: int) -> tuple[Action, ...]:
    from envgym import make
    from envgym_web.miniwob import miniwob_task

    async with make("web/miniwob-v1") as env:
        obs, _ = await env.reset(task=miniwob_task(page, seed))
        dom = obs.text.split("\n\n", 1)[1]
        return tuple(SOLVERS[page](obs.text.splitlines()[0].removeprefix("GOAL: "), parse(dom)))


async def build_async() -> list[TaskSpec]:
    from envgym_web.miniwob import miniwob_task

    tasks = []
    for page in SOLVERS:
        for seed in SEEDS:
            solution = await _solve(page, seed)
            tasks.append(miniwob_task(page, seed, split=split_of(len(tasks)), solution=solution))  # type: ignore[arg-type]
    return tasks


def main() -> None:
    write_suite(SUITE, asyncio.run(build_async()))


if __name__ == "__main__":
    main()
