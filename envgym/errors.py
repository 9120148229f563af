"""Errors, typed by the boundary they crossed.

Every exception envgym raises derives from :class:`EnvgymError` and, where one fits, from the builtin
it resembles, so ``except KeyError`` or ``except TimeoutError`` keeps working for callers that do not
know envgym. Classes defined outside this module say where (families' own subclasses are not drawn;
``tests/test_error_tree.py`` holds every class in ``envgym`` and the families to this tree, and lists the
few internal exceptions that never leave their module)::

    EnvgymError
    ├── SpecError(ValueError)            a task file, spec or config is invalid (names file/line/field)
    ├── RegistryError(KeyError)          an env id is malformed, unknown (did-you-mean) or registered twice
    │   └── PluginError(ImportError)     an entry-point plug-in failed to load
    ├── ExtraMissing(ImportError)        an env needs an extra that is not installed (names the pip command)
    ├── EnvError(RuntimeError)           the environment broke (not the agent's fault)
    │   ├── ResetNeeded                  step() before reset(), or after the episode ended
    │   ├── EnvClosed                    any call after close()
    │   ├── TaskMismatch(ValueError)     a task for one env id given to another env
    │   ├── StepTimeout(TimeoutError)    a step exceeded its deadline
    │   └── UserUnavailable(ConnectionError)  the simulated user could not answer (envgym/user/simulator)
    ├── SandboxError(RuntimeError)       a sandbox could not start, exec or copy (envgym/sandbox/errors.py:
    │                                    DaemonUnavailable, ImageMissing, SandboxCrashed, ExecTimeout, UnsafeArchive, …)
    ├── PolicyError(RuntimeError)        an agent failed to produce an action (endpoint down, model crash)
    │   ├── ContextOverflow              the conversation outgrew the model's context (the agent's failure)
    │   ├── PolicyTimeout(TimeoutError)  over the step deadline (the agent's); an endpoint's own timeout is infra
    │   ├── BackendError                 the in-process inference backend failed (envgym/rl/backends)
    │   │   └── PromptTooLong(ValueError)  a prompt over the backend's context (envgym/rl/backends)
    │   └── ImageError(ValueError)       an image input that cannot be used (envgym/images; proxy: HTTP 400)
    ├── VerifierError(RuntimeError)      grading itself failed (a broken check, bad verifier spec at run time)
    │   └── JudgeUnavailable(ConnectionError)  the LLM judge's endpoint did not answer (infra)
    ├── AgentFault(RuntimeError)         the agent's own action broke the episode (killed its sandbox,
    │   │                                exhausted a limit): the agent's failure, never an infra error
    │   └── WorkTreeUnreadable           the agent broke its work tree's .git (envgym_verifiers.tests)
    ├── ActionRefused                    the agent's call was refused; caught by its env inside step() and
    │   │                                shown as ``Observation.last_action_error``, never an episode's end
    │   ├── ArgumentsError(ValueError)   a call's JSON arguments are not the tool's (envgym/tools/args)
    │   └── ToolFailure                  a tool refused the call (envgym/tools/domain, with PolicyViolation;
    │                                    envgym/timed/tools); the families' ActionError, ToolError, AppFailure, …
    ├── RecordError(ValueError)          a result file is corrupt beyond the torn last line resume repairs
    ├── LineError(ValueError)            one JSONL line is not UTF-8 JSON (envgym/jsonl; its callers re-raise it
    │                                    as SpecError or RecordError naming file and line)
    ├── UnknownEpisode(KeyError)         send() named an episode the channel never handed out (envgym/vector)
    ├── HostLost(ConnectionError)        a Ray host died under an episode on every attempt (envgym/vector/ray)
    │   └── NoHosts                      the cluster has no live envgym host
    ├── WorkerLost(ConnectionError)      an eval worker process died under an episode on every attempt
    │                                    (envgym/eval_workers)
    └── WorkerFailed(RuntimeError)       an eval worker could not start, or its pool failed outside any episode

An agent's *invalid action* is never an exception that leaves ``step``: the :class:`ActionRefused` a tool
raises for it becomes ``Observation.last_action_error`` and the episode goes on. A *broken episode* becomes
a result record; the run goes on. Whose failure it was is decided once, by the rollout
(``envgym.rollout.blame_of``): an error class may say it outright in its ``blame`` class variable (``"agent"``,
``"env"``, ``"verifier"``, ``"infra"``; an instance may override it), otherwise the stage it escaped from decides.
Only ``infra`` becomes outcome ``infra_error``.
"""

from __future__ import annotations


class EnvgymError(Exception):
    """Root of every error envgym raises."""

    blame: str | None = None
    """Whose failure this is when it ends an episode, if the class knows; None lets the rollout's stage decide."""


class SpecError(EnvgymError, ValueError):
    """Invalid task file, spec or configuration. The message names the file, line and field."""

    blame = "infra"

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        where = ":".join(str(p) for p in (path, line) if p is not None)
        prefix = f"{where}: " if where else ""
        suffix = f" (field {field!r})" if field else ""
        super().__init__(f"{prefix}{message}{suffix}")
        self.path, self.line, self.field = path, line, field


class RegistryError(EnvgymError, KeyError):
    """Malformed, unknown or duplicate environment id."""

    blame = "infra"

    def __str__(self) -> str:  # KeyError would repr() the message; show it as written.
        return str(self.args[0]) if self.args else ""


class PluginError(RegistryError, ImportError):
    """An ``envgym.environments`` entry point could not be loaded."""


class ExtraMissing(EnvgymError, ImportError):
    """An env's plug-in is installed but the optional packages it runs on are not (``pip install 'envgym[X]'``).

    ``envgym check --all`` lists such envs as skipped, with this message, instead of failing on them; naming
    one explicitly is still an error. Infrastructure, not the agent's: the episode never started."""

    blame = "infra"


class EnvError(EnvgymError, RuntimeError):
    """The environment failed; the episode is an infra error, not an agent failure."""


class ResetNeeded(EnvError):
    """``step`` was called before ``reset`` or after the episode ended."""


class EnvClosed(EnvError):
    """The environment was used after ``close``."""


class TaskMismatch(EnvError, ValueError):
    """A task for one env id given to another env."""

    blame = "infra"


class StepTimeout(EnvError, TimeoutError):
    """A step (environment or agent) exceeded its deadline."""


class SandboxError(EnvgymError, RuntimeError):
    """A sandbox could not be started, executed in, copied from or stopped."""


class PolicyError(EnvgymError, RuntimeError):
    """The agent could not produce an action (unreachable endpoint, model failure)."""

    blame = "infra"


class ContextOverflow(PolicyError):
    """The conversation no longer fits the model's context (or the endpoint refused the request as too large):
    the agent's failure, since its own turns and the observations it asked for filled the context."""

    blame = "agent"


class PolicyTimeout(PolicyError, TimeoutError):
    """The agent did not answer within its deadline: the agent's failure (it was too slow)."""

    blame = "agent"


class VerifierError(EnvgymError, RuntimeError):
    """Grading failed for a reason that is not the agent's (a broken check); a failure, blamed on the verifier."""

    blame = "verifier"


class JudgeUnavailable(VerifierError, ConnectionError):
    """The LLM judge's endpoint did not answer: infrastructure, so the episode is an infra error."""

    blame = "infra"


class AgentFault(EnvgymError, RuntimeError):
    """The agent's own action broke the episode; recorded as the agent's failure with this message as cause."""

    blame = "agent"


class ActionRefused(EnvgymError):
    """The agent's call was refused (bad arguments, a tool or app that cannot do it, a policy that forbids it).

    Not an episode's end: the env that called the tool catches it inside ``step`` and shows the message as
    ``Observation.last_action_error``. No class blame: one that escapes an env is the env's bug, so the stage
    decides."""


class RecordError(EnvgymError, ValueError):
    """A result file is corrupt in a way resume cannot repair."""
