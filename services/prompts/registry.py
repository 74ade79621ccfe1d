"""A registry of named prompt templates; every template is checked when it is registered, so
a template that asks for nothing fails at import, not in the middle of a job."""

from __future__ import annotations

from postel.services.prompts.errors import PromptError
from postel.services.prompts.template import PromptTemplate


class TemplateRegistry:
    def __init__(self) -> None:
        self._templates: dict[str, PromptTemplate] = {}

    def register(self, template: PromptTemplate) -> PromptTemplate:
        template.check()
        if template.name in self._templates:
            raise PromptError(f"a prompt template named {template.name!r} is already registered")
        self._templates[template.name] = template
        return template

    def get(self, name: str) -> PromptTemplate:
        try:
            return self._templates[name]
        except KeyError:
            known = ", ".join(sorted(self._templates)) or "none"
            raise PromptError(f"no prompt template named {name!r} (known: {known})") from None

    def names(self) -> list[str]:
        return sorted(self._templates)

    def __contains__(self, name: object) -> bool:
        return name in self._templates
