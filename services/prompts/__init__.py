"""The prompt builder: templates as data, rendered per model capability into chat messages,
with untrusted text always delimited as data."""

from postel.services.prompts.builder import build_prompt
from postel.services.prompts.capability import Capability
from postel.services.prompts.delimit import neutralise
from postel.services.prompts.errors import PromptError
from postel.services.prompts.registry import TemplateRegistry
from postel.services.prompts.template import Example, OutputField, PromptTemplate
from postel.services.prompts.templates import TEMPLATES

__all__ = [
    "TEMPLATES",
    "Capability",
    "Example",
    "OutputField",
    "PromptError",
    "PromptTemplate",
    "TemplateRegistry",
    "build_prompt",
    "neutralise",
]
