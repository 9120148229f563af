"""Token-faithful rollouts: the recording OpenAI-compatible proxy, inference backends and training samples."""
