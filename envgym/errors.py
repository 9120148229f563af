"""Errors, typed by the boundary they crossed.

Every exception envgym raises derives from :class:`EnvgymError` and, where one fits, from the builtin
it resembles, so ``except KeyError`` or ``except TimeoutError`` keeps working for callers that do not
know envgym::

    EnvgymError
    ├── SpecError(ValueError)            a task file, spec or config is invalid (names file/line/field)
    ├── RegistryError(KeyError)          an env id is malformed, unknown (did-you-mean) or registered twice
    │   └── PluginError(ImportError)     an entry-point plug-in failed to load
    ├── ExtraMissing(ImportError)        an env needs an extra that is not installed (names the pip command)
    ├── EnvError(RuntimeError)           the environment broke (not the agent's fault)
    │   ├── ResetNeeded                  step() before reset(), or after the episode ended
    │   ├── EnvClosed                    any call after close()
    │   └── StepTimeout(TimeoutError)    a step exceeded its deadline
    ├── SandboxError(RuntimeError)       a sandbox could not start, exec or copy (envgym/sandbox/errors.py:
    │                                    DaemonUnavailable, ImageMissing, SandboxCrashed, ExecTimeout, UnsafeArchive, …)
    ├── PolicyError(RuntimeError)        an agent failed to produce an action (endpoint down, model crash)
    │   ├── ContextOverflow              the conversation outgrew the model's context (the agent's failure)
    │   └── PolicyTimeout(TimeoutError)  over the step deadline (the agent's); an endpoint's own timeout is infra
    ├── VerifierError(RuntimeError)      grading itself failed (a broken check, bad verifier spec at run time)
    │   └── JudgeUnavailable(ConnectionError)  the LLM judge's endpoint did not answer (infra)
    ├── AgentFault(RuntimeError)         the agent's own action broke the episode (killed its sandbox,
    │                                    exhausted a limit): the agent's failure, never an infra error
    ├── RecordError(ValueError)          a result file is corrupt beyond the torn last line resume repairs
    └── UnknownEpisode(KeyError)         send() named an episode the channel never handed out (envgym/vector)

An agent's *invalid action* is never an exception: it becomes ``Observation.last_action_error`` and the
episode goes on. A *broken episode* becomes a result record; the run goes on. Whose failure it was is
decided once, by the rollout (``envgym.rollout.blame_of``): an error class may say it outright in its
``blame`` class variable (``"agent"``, ``"env"``, ``"verifier"``, ``"infra"``; an instance may override it),
otherwise the stage it escaped from decides. Only ``infra`` becomes outcome ``infra_error``.
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


class RecordError(EnvgymError, ValueError):
    """A result file is corrupt in a way resume cannot repair."""
