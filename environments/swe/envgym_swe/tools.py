"""The SWE tools: ``bash``, ``view``, ``edit``, ``create``, ``search``, ``submit``, run in the episode's container.

Every tool returns the text the agent sees; an agent mistake (a missing file, an ``old`` text that is
absent or ambiguous) raises :class:`ToolError`, which the env turns into ``last_action_error``. Commands run
with a per-command timeout and an output cap; capped output ends with a note saying so. ``bash`` keeps the
working directory between calls (a ``cd`` persists), starting in ``/testbed``; relative paths of the other
tools are resolved against it.

``view`` and ``edit`` read only regular files up to :data:`MAX_FILE` bytes (a FIFO, a device or a huge file
is a tool error, never a hang); ``create`` never writes into a FIFO or device. A write that hits one of the
sandbox's disk caps (``ToolBox.disk``: mount -> size) says which limit was reached, in a ``bash`` result as
a note and from ``edit`` / ``create`` as the error; a write to the read-only root says what is writable.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from envgym.plugin import ActionRefused, NoArgs, function_schema
from envgym.plugin.sandbox import Sandbox, SandboxError

MAX_FILE = 8 << 20
"""Largest file ``view`` and ``edit`` read (use ``bash`` with ``sed -n`` / ``head`` for parts of larger ones)."""

_CWD_MARK = "\x1eENVGYM_CWD="
_CWD_RE = re.compile(r"\n?\x1eENVGYM_CWD=(.*)\n?$")


class ToolError(ActionRefused):
    """The agent's call could not be carried out; the message is shown to it."""


class BashArgs(BaseModel):
    cmd: str = Field(description="A bash command line, run in the repository's container (no network).")


class ViewArgs(BaseModel):
    path: str = Field(description="File or directory (relative paths start at the working directory).")
    start: int | None = Field(default=None, ge=1, description="First line to show (1-based).")
    end: int | None = Field(default=None, ge=1, description="Last line to show (inclusive).")


class EditArgs(BaseModel):
    path: str = Field(description="The file to change.")
    old: str = Field(description="Exact text to replace; must occur exactly once in the file.")
    new: str = Field(description="The replacement text.")


class CreateArgs(BaseModel):
    path: str = Field(description="The file to create or overwrite (parent folders are created).")
    content: str = Field(description="The whole content of the file.")


class SearchArgs(BaseModel):
    pattern: str = Field(description="An extended regular expression (grep -E).")
    path: str = Field(default=".", description="File or directory to search (recursively).")


ARGS: dict[str, type[BaseModel]] = {"bash": BashArgs, "view": ViewArgs, "edit": EditArgs, "create": CreateArgs,
                                    "search": SearchArgs, "submit": NoArgs}
TOOLS: list[dict[str, Any]] = [
    function_schema("bash", "Run a bash command in the repository (default directory /testbed); returns its output "
                    "(stdout and stderr) and exit code.", BashArgs),
    function_schema("view", "Show a file with line numbers (optionally lines start..end), or list a directory.",
                    ViewArgs),
    function_schema("edit", "Replace the exact text `old` with `new` in a file; `old` must occur exactly once.",
                    EditArgs),
    function_schema("create", "Create (or overwrite) a file with the given content.", CreateArgs),
    function_schema("search", "Search files for a regular expression; prints file:line:text.", SearchArgs),
    function_schema("submit", "Finish: your changes to the repository are graded by hidden tests.", NoArgs),
]


@dataclass
class ToolBox:
    """The tools bound to one container; ``cwd`` persists across ``bash`` calls."""

    sandbox: Sandbox
    cwd: str = "/testbed"
    timeout_s: float = 120.0
    max_output: int = 16_000
    """Bytes of output kept per call; the rest is dropped with a note."""
    disk: dict[str, str] = field(default_factory=dict)
    """The sandbox's writable mounts and their caps (tmpfs sizes), named when a write hits one."""

    def _path(self, path: str) -> str:
        if not path:
            raise ToolError("path is empty")
        return posixpath.normpath(posixpath.join(self.cwd, path))

    def _cap(self, text: str, truncated: bool = False) -> str:
        data = text.encode()
        if len(data) > self.max_output:
            text, truncated = data[: self.max_output].decode(errors="ignore"), True
        if truncated:
            text += f"\n[output truncated: only the first {self.max_output} bytes are shown]"
        return text

    async def bash(self, args: BashArgs) -> str:
        script = (f"exec 2>&1\ncd {shlex.quote(self.cwd)} || exit 1\n{args.cmd}\n__envgym_rc=$?\n"
                  f"printf '\\n{_CWD_MARK}%s\\n' \"$PWD\"\nexit $__envgym_rc")
        result = await self.sandbox.session.exec(["bash", "-c", script], timeout=self.timeout_s,
                                                 max_output=self.max_output + 4096)
        output = result.stdout
        found = _CWD_RE.search(output)
        if found:
            self.cwd = found.group(1) or self.cwd
            output = output[: found.start()]
        text = self._cap(output, result.truncated)
        if "No space left on device" in output or "Disk quota exceeded" in output:
            text += f"\n[{await self._disk_full()}]"
        elif "Read-only file system" in output and self.disk:
            text += f"\n[{self._read_only()}]"
        if result.timed_out:
            text += f"\n[command timed out after {self.timeout_s:g}s and was killed]"
        elif result.exit_code:
            text += f"\n[exit code {result.exit_code}]"
        return text or "[no output]"

    async def _disk_full(self) -> str:
        """Which cap a failed write hit: the mounts of ``disk`` (nearly) full now, else all of them."""
        if not self.disk:
            return "No space left on device"
        r = await self.sandbox.session.exec(["df", "-Pk", *self.disk], timeout=30)
        full = []
        for line in r.stdout.splitlines()[1:]:
            fields = line.split()
            if (len(fields) >= 6 and fields[-1] in self.disk and fields[3].isdigit() and fields[1].isdigit()
                    and (int(fields[3]) * 100 <= int(fields[1]) or int(fields[3]) < 256)):
                full.append(fields[-1])
        named = ", ".join(f"{self.disk[m]} on {m}" for m in (full or self.disk))
        return f"No space left on device: the sandbox's disk limit ({named}) was reached"

    def _read_only(self) -> str:
        return f"read-only file system: only {', '.join(self.disk)} are writable in this sandbox"

    async def _write(self, path: str, content: str, mode: int) -> None:
        try:
            await self.sandbox.write(path, content, mode=mode)
        except SandboxError as exc:
            message = str(exc)
            if "No space left on device" in message or "File too large" in message:
                raise ToolError(f"{path}: {await self._disk_full()}") from None
            if "Read-only file system" in message:
                raise ToolError(f"{path}: {self._read_only() if self.disk else 'read-only file system'}") from None
            if "write failed: " in message:  # the helper's OSError: a permission, a path through a file ...
                raise ToolError(f"cannot write {path}: {message.split('write failed: ', 1)[1]}") from None
            raise

    async def _read_text(self, path: str) -> str:
        # A process, not the session's own read: were the file swapped for a FIFO since _kind, this times out.
        r = await self.sandbox.session.exec(["bash", "-c", '[ -f "$1" ] || exit 3; exec head -c "$2" -- "$1"', "_",
                                             path, str(MAX_FILE + 1)], timeout=30, max_output=MAX_FILE + 1)
        if r.timed_out or r.exit_code:
            raise ToolError(f"{path} could not be read" + (" (timed out)" if r.timed_out else ""))
        data = r.stdout
        if "\0" in data[:8192]:
            raise ToolError(f"{path} is a binary file")
        return data

    async def _kind(self, path: str, *, reading: bool = True) -> str:
        """``missing``, ``dir``, or the octal mode of a regular file; a ToolError for anything else (and for a
        file too large to read, when ``reading``)."""
        r = await self.sandbox.session.exec(["bash", "-c", 'if [ -d "$1" ]; then echo dir; elif [ -e "$1" ]; then '
                                             'stat -L -c "%F|%a|%s" -- "$1"; else echo missing; fi', "_", path],
                                            timeout=30)
        out = r.stdout.strip()
        if out in ("dir", "missing"):
            return out
        kind, _, rest = out.partition("|")
        mode, _, size = rest.partition("|")
        if kind not in ("regular file", "regular empty file"):
            raise ToolError(f"{path} is a {kind or 'special file'}, not a regular file: only regular files can be "
                            "viewed or edited")
        if reading and size.isdigit() and int(size) > MAX_FILE:
            raise ToolError(f"{path} is {int(size)} bytes, more than the {MAX_FILE >> 20} MiB view and edit read; "
                            "use bash (head, sed -n START,ENDp) for parts of it")
        return mode

    async def view(self, args: ViewArgs) -> str:
        path = self._path(args.path)
        kind = await self._kind(path)
        if kind == "missing":
            raise ToolError(f"no such file or directory: {path}")
        if kind == "dir":
            r = await self.sandbox.session.exec(
                ["bash", "-c", 'find "$1" -maxdepth 2 -not -path "*/.git" -not -path "*/.git/*" '
                 '-not -path "*/__pycache__*" | sort', "_", path], timeout=self.timeout_s, max_output=self.max_output)
            return self._cap(r.stdout, r.truncated)
        lines = (await self._read_text(path)).splitlines()
        start = args.start or 1
        end = min(args.end or len(lines), len(lines))
        if start > max(len(lines), 1):
            raise ToolError(f"{path} has {len(lines)} lines; start={start} is past the end")
        if end < start:
            raise ToolError(f"end={args.end} is before start={start}")
        return self._cap("\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(start, end + 1)))

    async def edit(self, args: EditArgs) -> str:
        path = self._path(args.path)
        kind = await self._kind(path)
        if kind in ("missing", "dir"):
            raise ToolError(f"no such file: {path}" if kind == "missing" else f"{path} is a directory")
        if not args.old:
            raise ToolError("old is empty: give the exact text to replace (use create to write a whole file)")
        text = await self._read_text(path)
        count = text.count(args.old)
        if count == 0:
            raise ToolError(f"old text not found in {path} (it must match exactly, whitespace included)")
        if count > 1:
            raise ToolError(f"old text matches {count} times in {path}; include more surrounding lines to make it "
                            "unique")
        at = text.index(args.old)
        updated = text[:at] + args.new + text[at + len(args.old):]
        await self._write(path, updated, int(kind, 8) if kind.isdigit() else 0o644)
        first = text[:at].count("\n") + 1
        last = first + args.new.count("\n")
        lines = updated.splitlines()
        lo, hi = max(first - 3, 1), min(last + 3, len(lines))
        snippet = "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(lo, hi + 1))
        return self._cap(f"edited {path}; lines {lo}-{hi} now read:\n{snippet}")

    async def create(self, args: CreateArgs) -> str:
        path = self._path(args.path)
        kind = await self._kind(path, reading=False)
        if kind == "dir":
            raise ToolError(f"{path} is a directory")
        await self._write(path, args.content, int(kind, 8) if kind.isdigit() else 0o644)
        verb = "overwrote" if kind != "missing" else "created"
        return f"{verb} {path} ({len(args.content.splitlines())} lines)"

    async def search(self, args: SearchArgs) -> str:
        path = self._path(args.path)
        r = await self.sandbox.session.exec(
            ["grep", "-rnIE", "--exclude-dir=.git", "--exclude-dir=__pycache__", "-e", args.pattern, "--", path],
            timeout=self.timeout_s, max_output=self.max_output, cwd=self.cwd)
        if r.exit_code == 2:
            raise ToolError(f"search failed: {r.stderr.strip() or r.stdout.strip()}")
        if r.timed_out:
            return self._cap(r.stdout, True) + f"\n[search timed out after {self.timeout_s:g}s]"
        return self._cap(r.stdout, r.truncated) if r.stdout else f"no matches for {args.pattern!r} in {path}"
