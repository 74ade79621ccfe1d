from __future__ import annotations

from postel.messages.errors import InvalidInput


class PromptError(InvalidInput):
    """A prompt that cannot be built: it asks for nothing, or names an unknown template."""
