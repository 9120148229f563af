"""Tool arguments: typed models, OpenAI function schemas, decoding a call's JSON arguments.

What every tool-using family shares, whatever its tools run against (a SQLite store, a timed world, a
container). A tool is a plain function whose ``args`` parameter is annotated with a pydantic model;
:func:`args_model_of` finds that model and :func:`function_schema` turns it into the OpenAI
function-calling schema agents see (titles dropped, unknown arguments refused). :func:`decode_arguments`
turns a call's JSON ``arguments`` into a dict or an :class:`ArgumentsError` whose message is the agent's
error observation (never a crash, at any nesting depth); :func:`parse_arguments` also validates them
against the tool's model (an unknown or refused argument is an ``ArgumentsError`` naming each problem).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from envgym.errors import ActionRefused

M = TypeVar("M", bound=BaseModel)

__all__ = ["ArgumentsError", "NoArgs", "args_model_of", "decode_arguments", "function_schema", "parse_arguments"]


class NoArgs(BaseModel):
    """Arguments of a tool that takes none."""


def args_model_of(fn: Callable[..., Any]) -> type[BaseModel]:
    """The pydantic model annotating ``fn``'s ``args`` parameter; TypeError when there is none."""
    annotation = fn.__annotations__.get("args")
    model = fn.__globals__.get(annotation) if isinstance(annotation, str) else annotation
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"tool {fn.__name__}: annotate 'args' with a pydantic model")
    return model


def function_schema(name: str, description: str, args_model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI function-calling schema of a tool."""
    params = args_model.model_json_schema()
    params.pop("title", None)
    for prop in params.get("properties", {}).values():
        prop.pop("title", None)
    params.setdefault("properties", {})
    params["additionalProperties"] = False
    return {"type": "function", "function": {"name": name, "description": description, "parameters": params}}


class ArgumentsError(ActionRefused, ValueError):
    """A tool call's arguments are not a JSON object, or not the tool's; the message names the tool and the
    problem, ``raw`` holds the decoded object when there was one."""

    def __init__(self, message: str, raw: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.raw = raw


def decode_arguments(name: str, arguments: str | None) -> dict[str, Any]:
    """A tool call's JSON ``arguments`` (empty means ``{}``) as a dict, else :class:`ArgumentsError`."""
    try:
        raw = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise ArgumentsError(f"invalid JSON in arguments of {name}: {exc.msg} at column {exc.colno}") from None
    except RecursionError:  # a malformed action at any depth is the agent's error observation, not a crash
        raise ArgumentsError(f"arguments of {name} nest too deeply to decode") from None
    if not isinstance(raw, dict):
        raise ArgumentsError(f"arguments of {name} must be a JSON object")
    return raw


def parse_arguments(name: str, arguments: str | None, model: type[M]) -> tuple[dict[str, Any], M]:
    """A call's JSON ``arguments`` decoded and validated against the tool's ``model``: ``(raw, args)``.

    An argument the model does not name, or one it refuses, is an :class:`ArgumentsError` naming each
    problem (``raw`` kept on the error), so the env can report the call as the agent's error.
    """
    raw = decode_arguments(name, arguments)
    unknown = set(raw) - set(model.model_fields)
    if unknown:
        raise ArgumentsError(f"unknown argument(s) for {name}: {', '.join(sorted(unknown))}", raw)
    try:
        return raw, model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ArgumentsError(f"invalid arguments for {name}: {problems}", raw) from None
