"""Recording agents: envgym's ``openai`` agent pointed at a :class:`RecordingProxy`, one session per episode.

    async with RecordingProxy(backend) as proxy:
        factory = RecordingAgentFactory(proxy, temperature=1.0, max_tokens=64)
        trajectory = await run_episode(env, factory.create(task), task)
        trajectory.token_data            # every call's prompt ids, completion ids, logprobs, policy version
        samples_from_episode(trajectory, group_id="g0")

Each agent opens a fresh session (``agent.session_key``); its ``token_data`` is the session's live list, so
the rollout copies it into the trajectory as it does for the ``hf`` agent, and the proxy forgets the session
when the agent closes. Any other OpenAI harness gets the same by using ``proxy.base_url_for(key)``.
With ``images=True`` the agent sends the observation's screenshots; being in the proxy's process, it puts
each into ``proxy.images`` and sends only its ``envgym-image:sha256:...`` reference.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from envgym.agents.openai import OpenAIAgent, OpenAIAgentFactory
from envgym.rl.vision import REF_SCHEME

if TYPE_CHECKING:
    from envgym._images import ObservedImage
    from envgym.rl.proxy import RecordingProxy
    from envgym.task import TaskSpec


class RecordingAgentFactory:
    """Builds :class:`RecordingAgent`\\ s on one proxy; ``openai`` agent settings pass through."""

    def __init__(self, proxy: RecordingProxy, *, temperature: float = 1.0, max_tokens: int | None = None,
                 timeout_s: float = 600, retries: int = 0, **settings: Any) -> None:
        self.proxy = proxy
        self.settings = {"temperature": temperature, "max_tokens": max_tokens, "timeout_s": timeout_s,
                         "retries": retries, **settings}

    def create(self, task: TaskSpec) -> RecordingAgent:
        key = f"{task.id}-{secrets.token_hex(6)}"
        factory = OpenAIAgentFactory(self.proxy.base_url_for(key), self.proxy.model_name, **self.settings)
        return RecordingAgent(factory, self.proxy, key)

    def describe(self) -> dict[str, Any]:
        return {"agent": "recording-openai", "model": self.proxy.model_name,
                **{k: v for k, v in self.settings.items() if k != "api_key"}}

    async def aclose(self) -> None:
        """Nothing shared to release: each agent closes its own client."""


class RecordingAgent(OpenAIAgent):
    name = "recording-openai"

    def __init__(self, factory: OpenAIAgentFactory, proxy: RecordingProxy, key: str) -> None:
        super().__init__(factory)
        self.session_key = key
        self._proxy = proxy
        self.token_data = proxy.session(key).token_data

    def image_url(self, image: ObservedImage) -> str:
        """The image put straight into the proxy's store; only its reference travels (no base64 round trip)."""
        return REF_SCHEME + self._proxy.images.put(image.data, image.media_type)

    async def close(self) -> None:
        await self._factory.aclose()
        self._proxy.close_session(self.session_key)
