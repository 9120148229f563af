"""The tree drawn in ``envgym/errors.py`` is true to the code: every exception class defined in ``envgym`` or a
family package derives from :class:`~envgym.errors.EnvgymError`, but for the few listed here with a reason."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings

import pytest

import envgym.errors
from envgym.errors import ActionRefused, EnvgymError

PACKAGES = ("envgym", "envgym_bfcl", "envgym_gui", "envgym_mcp", "envgym_swe", "envgym_textgames", "envgym_timed",
            "envgym_tool", "envgym_web")

ALLOWED = {
    "envgym.vector.ray._Lost": "a job future's exception, caught in the same module (HostLost is what leaves it)",
    "envgym_swe.cli._Stopped": "Ctrl-C or SIGTERM's exit code (130, 143) carried to the subcommand's top, caught "
                               "in the same module",
    "envgym_gui.verify._Missing": "a value a check reads is absent; caught in the same module as a failed check",
    "envgym_mcp.servers.kanban.Refused": "the stdlib-only kanban server runs in the sandbox, not in envgym's "
                                         "process; a refusal there is a JSON-RPC tool error",
}


def _modules() -> list[object]:
    """Every module of the packages, imported; one whose optional extra is missing is skipped (``__main__``
    modules are scripts and are not imported)."""
    found = []
    for name in PACKAGES:
        package = importlib.import_module(name)
        found.append(package)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if info.name.rsplit(".", 1)[-1] == "__main__":
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    found.append(importlib.import_module(info.name))
            except ModuleNotFoundError as exc:  # an optional extra (mcp, train, ...) that is not installed
                if exc.name is None or exc.name.split(".")[0] in PACKAGES:
                    raise
    return found


def _exceptions() -> dict[str, type[BaseException]]:
    out = {}
    for module in _modules():
        for value in vars(module).values():
            if (inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__
                    and not issubclass(value, Warning)):  # warnings are issued, not raised as errors
                out[f"{value.__module__}.{value.__qualname__}"] = value
    return out


def test_every_exception_class_is_an_envgym_error_or_allowed_with_a_reason() -> None:
    classes = _exceptions()
    assert len(classes) > 40  # the walk reached the families
    stray = sorted(name for name, cls in classes.items() if not issubclass(cls, EnvgymError) and name not in ALLOWED)
    assert not stray, f"exception classes outside the tree in envgym/errors.py: {stray}"
    assert not [name for name in ALLOWED if name not in classes], "an allowed class no longer exists"
    assert not [name for name in ALLOWED if issubclass(classes[name], EnvgymError)], "an allowed class joined the tree"


def test_every_class_of_errors_py_is_drawn_in_its_tree() -> None:
    doc = envgym.errors.__doc__ or ""
    for name, cls in vars(envgym.errors).items():
        if inspect.isclass(cls) and issubclass(cls, BaseException):
            assert f" {name}" in doc, f"{name} is not in envgym/errors.py's tree"


@pytest.mark.parametrize(("name", "bases"), [
    ("envgym._images.ImageError", ("PolicyError", "ValueError")),
    ("envgym._jsonl.LineError", ("EnvgymError", "ValueError")),
    ("envgym.tools.args.ArgumentsError", ("ActionRefused", "ValueError")),
    ("envgym.tools.domain.ToolFailure", ("ActionRefused",)),
    ("envgym.timed.tools.ToolFailure", ("ActionRefused",)),
    ("envgym_gui.actions.ActionError", ("ActionRefused",)),
    ("envgym_gui.osworld.Skip", ("SpecError",)),
    ("envgym_gui.readers.FileFormatError", ("EnvgymError", "ValueError")),
    ("envgym_swe.sources.SourceError", ("EnvgymError", "RuntimeError")),
    ("envgym_swe.tools.ToolError", ("ActionRefused",)),
    ("envgym_web.actions.ActionError", ("ActionRefused",)),
    ("envgym_web.apps.base.AppFailure", ("ActionRefused",)),
    ("envgym_web.apps.base.Forbidden", ("ActionRefused",)),
])
def test_joined_classes_keep_their_builtin_base(name: str, bases: tuple[str, ...]) -> None:
    module, _, qualname = name.rpartition(".")
    cls = getattr(importlib.import_module(module), qualname)
    assert tuple(b.__name__ for b in cls.__bases__) == bases


def test_blame_of_the_joined_classes() -> None:
    """A refused call says nothing of whose it is (one escaping an env is the env's bug: the stage decides), nor
    does an unusable image (a client's bad request, or a chat template); fetching a suite's sources is infra."""
    from envgym._images import ImageError
    from envgym.rollout import blame_of
    from envgym_swe.sources import SourceError

    assert ActionRefused.blame is None and ImageError.blame is None
    assert blame_of(ImageError("x"), "agent").value == "agent"
    assert SourceError.blame == "infra"
