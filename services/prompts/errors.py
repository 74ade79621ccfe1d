from __future__ import annotations


class PromptError(ValueError):
    """A prompt that cannot be built: it asks for nothing, or names an unknown template."""
