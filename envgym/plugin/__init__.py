"""The plug-in surface: everything an environment family may import from envgym, first- or third-party.

A family (``environments/<family>/envgym_<family>`` here, or a package of your own) imports envgym only
from ``envgym.plugin`` and its submodules; ``tests/test_plugin_surface.py`` holds the first-party families
to that. Every name listed in ``__all__`` here and in the submodules is covered by Semantic Versioning
(see ``CHANGELOG.md``): it changes incompatibly only in a major version, and a name that moves keeps an
alias that warns for at least one minor version. Kernel modules outside this package are private to
envgym, whatever their names say.

This module is the core. Its names load on first use (PEP 562, the same mechanism as the root package's), so
importing a submodule such as :mod:`envgym.plugin.cli` (what ``envgym --help`` runs through every family's
subcommand hook) loads none of them; and the core itself loads no Docker client and no world:

- the env contract: :class:`Env`, :class:`StepResult`, :class:`NullAccepted`, :class:`Clock` and its two
  clocks;
- the data: :class:`TaskSpec` (+ suite files: :func:`load_suite`, :func:`write_suite`, ...), the types
  (:class:`Action`, :class:`Observation`, :class:`ToolCall`, :class:`ToolResult`, :class:`Verdict`, ...),
  :class:`Trajectory`;
- the errors a family raises or catches, from the root :class:`EnvgymError` down;
- registration: :func:`register`, :func:`register_suite`, :func:`register_verifier`, :class:`EnvSpec` (an
  authoring script that runs its own env uses the user's ``envgym.make``, the one root name a family may import);
- task generators: :func:`register_generator` (a seeded generator served as a suite, ``NAME@START:STOP``),
  the :class:`GenerationRequest` its function takes, :class:`GeneratorSpec`, and :func:`distinct` (counts
  distinct tasks, :class:`Distinct`);
- grading: :class:`VerifyContext` and the state / evidence types, :func:`grade`, the matcher-holding field
  types a verifier kind's spec declares (:data:`Matchable`, :data:`MatchArgs`), the verifier spec types
  a family builds (rubric, answer, write action, combinators) and the helpers that write them;
- tool calls: the argument helpers (:func:`decode_arguments`, :func:`function_schema`, ...);
- tampering agents: :class:`TamperAgent` (the base ``envgym check`` plays) and :class:`ForwardInstruction`.

The heavier, optional parts are submodules, imported only by the families that use them:
:mod:`envgym.plugin.sandbox` (sandboxes and containers), :mod:`envgym.plugin.tools` (the tool-use env and
its SQLite store), :mod:`envgym.plugin.timed` (the time-evolving world base), :mod:`envgym.plugin.tests`
(the ``tests`` verifier kind: a repository's tests in a sandbox), :mod:`envgym.plugin.records` (result
records, exporters, JSONL) and :mod:`envgym.plugin.cli` (what an ``envgym`` subcommand needs).
"""

from __future__ import annotations

import typing as _typing

from envgym import _lazy

if _typing.TYPE_CHECKING:
    from envgym.clock import Clock, SimClock, SystemClock
    from envgym.env import Env, NullAccepted, StepResult
    from envgym.errors import (
        ActionRefused,
        AgentFault,
        EnvClosed,
        EnvError,
        EnvgymError,
        ExtraMissing,
        JudgeUnavailable,
        PluginError,
        RegistryError,
        ResetNeeded,
        SandboxError,
        SpecError,
        StepTimeout,
        TaskMismatch,
        VerifierError,
    )
    from envgym.generate import Distinct, GenerationRequest, distinct
    from envgym.registry import EnvSpec, GeneratorSpec, register, register_generator, register_suite, register_verifier
    from envgym.tamper import ForwardInstruction, TamperAgent
    from envgym.task import Split, TaskSpec, list_suites, load_suite, load_tasks, suites_root, write_suite, write_tasks
    from envgym.tools.args import (
        ArgumentsError,
        NoArgs,
        args_model_of,
        decode_arguments,
        function_schema,
        parse_arguments,
    )
    from envgym.trajectory import StepRecord, Trajectory
    from envgym.types import (
        Action,
        CriterionResult,
        FrozenModel,
        Limits,
        Observation,
        Outcome,
        ToolCall,
        ToolResult,
        Usage,
        Verdict,
        canonical_json,
    )
    from envgym.verify import CallRecord, JudgeConfig, StateView, VerifyContext, grade
    from envgym.verify.context import Rows, Snapshot, SqlView
    from envgym.verify.matching import Matchable, MatchArgs, args_match, value_matches
    from envgym.verify.rubric import answer_pattern, number_pattern, refuse_quote, refuse_quotes
    from envgym.verify.spec import (
        AllOfSpec,
        AnswerSpec,
        AnyOfSpec,
        CalledCheck,
        Criterion,
        ExpectedWrite,
        LLMJudgeCheck,
        RubricSpec,
        SqlCheck,
        VerifierSpec,
        WriteActionSpec,
    )

__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "envgym.clock": ("Clock", "SimClock", "SystemClock"),
    "envgym.env": ("Env", "NullAccepted", "StepResult"),
    "envgym.errors": ("ActionRefused", "AgentFault", "EnvClosed", "EnvError", "EnvgymError", "ExtraMissing",
                      "JudgeUnavailable", "PluginError", "RegistryError", "ResetNeeded", "SandboxError", "SpecError",
                      "StepTimeout", "TaskMismatch", "VerifierError"),
    "envgym.generate": ("Distinct", "GenerationRequest", "distinct"),
    "envgym.registry": ("EnvSpec", "GeneratorSpec", "register", "register_generator", "register_suite",
                        "register_verifier"),
    "envgym.tamper": ("ForwardInstruction", "TamperAgent"),
    "envgym.task": ("Split", "TaskSpec", "list_suites", "load_suite", "load_tasks", "suites_root", "write_suite",
                    "write_tasks"),
    "envgym.tools.args": ("ArgumentsError", "NoArgs", "args_model_of", "decode_arguments", "function_schema",
                          "parse_arguments"),
    "envgym.trajectory": ("StepRecord", "Trajectory"),
    "envgym.types": ("Action", "CriterionResult", "FrozenModel", "Limits", "Observation", "Outcome", "ToolCall",
                     "ToolResult", "Usage", "Verdict", "canonical_json"),
    "envgym.verify": ("CallRecord", "JudgeConfig", "StateView", "VerifyContext", "grade"),
    "envgym.verify.context": ("Rows", "Snapshot", "SqlView"),
    "envgym.verify.matching": ("Matchable", "MatchArgs", "args_match", "value_matches"),
    "envgym.verify.rubric": ("answer_pattern", "number_pattern", "refuse_quote", "refuse_quotes"),
    "envgym.verify.spec": ("AllOfSpec", "AnswerSpec", "AnyOfSpec", "CalledCheck", "Criterion", "ExpectedWrite",
                           "LLMJudgeCheck", "RubricSpec", "SqlCheck", "VerifierSpec", "WriteActionSpec"),
})

__all__ = [
    "Action",
    "ActionRefused",
    "AgentFault",
    "AllOfSpec",
    "AnswerSpec",
    "AnyOfSpec",
    "ArgumentsError",
    "CallRecord",
    "CalledCheck",
    "Clock",
    "Criterion",
    "CriterionResult",
    "Distinct",
    "Env",
    "EnvClosed",
    "EnvError",
    "EnvSpec",
    "EnvgymError",
    "ExpectedWrite",
    "ExtraMissing",
    "ForwardInstruction",
    "FrozenModel",
    "GenerationRequest",
    "GeneratorSpec",
    "JudgeConfig",
    "JudgeUnavailable",
    "LLMJudgeCheck",
    "Limits",
    "MatchArgs",
    "Matchable",
    "NoArgs",
    "NullAccepted",
    "Observation",
    "Outcome",
    "PluginError",
    "RegistryError",
    "ResetNeeded",
    "Rows",
    "RubricSpec",
    "SandboxError",
    "SimClock",
    "Snapshot",
    "SpecError",
    "Split",
    "SqlCheck",
    "SqlView",
    "StateView",
    "StepRecord",
    "StepResult",
    "StepTimeout",
    "SystemClock",
    "TamperAgent",
    "TaskMismatch",
    "TaskSpec",
    "ToolCall",
    "ToolResult",
    "Trajectory",
    "Usage",
    "Verdict",
    "VerifierError",
    "VerifierSpec",
    "VerifyContext",
    "WriteActionSpec",
    "answer_pattern",
    "args_match",
    "args_model_of",
    "canonical_json",
    "decode_arguments",
    "distinct",
    "function_schema",
    "grade",
    "list_suites",
    "load_suite",
    "load_tasks",
    "number_pattern",
    "parse_arguments",
    "refuse_quote",
    "refuse_quotes",
    "register",
    "register_generator",
    "register_suite",
    "register_verifier",
    "suites_root",
    "value_matches",
    "write_suite",
    "write_tasks",
]
