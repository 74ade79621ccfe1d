"""The prompt builder: templates as data, rendered per model capability into chat messages,
with untrusted text always delimited as data."""

from services.prompts.builder import build_prompt
from services.prompts.capability import Capability
from services.prompts.delimit import neutralise
from services.prompts.errors import PromptError
from services.prompts.registry import TemplateRegistry
from services.prompts.template import Example, OutputField, PromptTemplate
from services.prompts.templates import TEMPLATES

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
