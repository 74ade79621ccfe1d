from __future__ import annotations

from postel.messages.errors import PostelError


class PromptError(PostelError, ValueError):
    """A prompt that cannot be built: it asks for nothing, or names an unknown template."""
