"""Sandbox faults, each a :class:`~envgym.errors.SandboxError` and the builtin it resembles.

::

    SandboxError(RuntimeError)                      (envgym.errors)
    ├── DaemonUnavailable(ConnectionError)          no Docker engine answers; the message says how to start one
    ├── ImageMissing(LookupError)                   the image is not built; the message names the build command
    ├── SandboxStateError                           used before start or after stop (lifecycle misuse)
    ├── SandboxCrashed                              the container died under a command (killed, OOM of PID 1, gone,
    │                                               an agent's ``kill 1``), raised again by every later call;
    │                                               ``blame="infra"`` when the engine shows an outside cause
    ├── ExecTimeout(TimeoutError)                   no answer by the deadline and the command could not be stopped
    │                                               (a frozen / paused container); a command that merely overran
    │                                               its timeout is a result with ``timed_out=True`` instead
    ├── SandboxFileNotFound(FileNotFoundError)      read/copy of a path that does not exist in the sandbox
    ├── ChannelClosed(ConnectionError)              a channel's process ended (or the channel was closed) while
    │                                               the sandbox still runs
    ├── UnsafeArchive(ValueError)                   copy-out met an absolute path, ``..``, a link leading outside,
    │   │                                           a device node or more bytes than allowed
    │   └── BrokenArchive                           copy-out got no whole archive: garbage, cut short, a file that
    │                                               changed while it was archived (blamed by stage, see the class)
    └── SpecRejected(ValueError)                    the container spec asks for privileged mode, host namespaces,
                                                    the Docker socket or added capabilities without opting in
"""

from __future__ import annotations

from envgym.errors import SandboxError

__all__ = [
    "BrokenArchive",
    "ChannelClosed",
    "DaemonUnavailable",
    "ExecTimeout",
    "ImageMissing",
    "SandboxCrashed",
    "SandboxError",
    "SandboxFileNotFound",
    "SandboxStateError",
    "SpecRejected",
    "UnsafeArchive",
]

START_DOCKER_HINT = ("start it with `sudo bash sandboxes/host-setup.sh` (installs docker.io and starts dockerd), "
                     "or `sudo dockerd &`, or point DOCKER_HOST at a running engine")


class DaemonUnavailable(SandboxError, ConnectionError):
    """No Docker engine answers (or the ``docker`` extra is not installed)."""

    blame = "infra"


class ImageMissing(SandboxError, LookupError):
    """The requested image does not exist locally (nothing is ever pulled)."""

    blame = "infra"


class SandboxStateError(SandboxError):
    """A sandbox was used outside its RUNNING state (before ``start`` or after ``stop``)."""


class SandboxCrashed(SandboxError):
    """The container died while a command ran in it, or was gone when one was sent (then on every later call).

    ``blame`` is ``"infra"`` when something outside the container caused it (a kill the backend did not send,
    the container removed, the engine restarted: :mod:`envgym.sandbox.dockerevents`), else None, and the
    rollout's stage decides (the agent's, after its first action). One raised *from* another (an env re-wording
    the crash: ``raise SandboxCrashed(...) from exc``) takes the blame of the first in its cause chain that has
    one, unless given its own.
    """

    def __init__(self, *args: object, blame: str | None = None) -> None:
        super().__init__(*args)
        self._blame = blame

    @property  # type: ignore[override]  # EnvgymError's class variable, read per instance here
    def blame(self) -> str | None:
        if self._blame:
            return self._blame
        cause = self.__cause__
        for _ in range(8):
            if cause is None:
                break
            if isinstance(cause, SandboxCrashed) and cause._blame:
                return cause._blame
            cause = cause.__cause__
        return None

    @blame.setter
    def blame(self, value: str | None) -> None:
        self._blame = value


class ExecTimeout(SandboxError, TimeoutError):
    """The command's deadline passed and the sandbox could not be made to stop it (frozen container)."""


class SandboxFileNotFound(SandboxError, FileNotFoundError):
    """A path read or copied from the sandbox does not exist there."""


class ChannelClosed(SandboxError, ConnectionError):
    """A channel's process ended (killed from inside, crashed, exited) or the channel was closed, while the sandbox
    itself still runs (a dead sandbox raises :class:`SandboxCrashed` instead)."""


class UnsafeArchive(SandboxError, ValueError):
    """An archive copied out of a sandbox contains a member that could escape the destination."""


class BrokenArchive(UnsafeArchive):
    """Copy-out got bytes that are not a whole tar archive: not a tar at all, cut short (a header, a member's
    data or the end-of-archive block missing), or the sandbox's file changed while it was archived.

    The archive is made inside the sandbox from what the sandbox holds, so no class blame: the rollout's stage
    decides, as for every sandbox fault (``infra`` at reset, before the agent acted; the agent's after, since
    only its commands ran there and it controls the content, e.g. a file it truncates while it is copied out).
    A transport that broke on the way (the engine's stream) is the backend's to raise as its own error; it
    never reaches the archive reader as a short archive.
    """


class SpecRejected(SandboxError, ValueError):
    """A container spec was refused by the validator; the message names the opt-in that would allow it."""

    blame = "infra"
