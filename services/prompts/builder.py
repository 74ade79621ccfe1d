"""Render a prompt template plus the data of one call into chat messages (system + user)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from postel.services.llm.models import ChatMessage
from postel.services.prompts.capability import Capability
from postel.services.prompts.delimit import data_block, data_parts
from postel.services.prompts.style import STYLES, Style
from postel.services.prompts.template import Example, PromptTemplate

DEFAULT_SYSTEM = "You are a helpful assistant."
DEFAULT_ROLE = "You are a helpful assistant."
DEFAULT_INSTRUCTIONS = "Derive the following values from the user text:"
DEFAULT_OUTPUT_FORMAT = "Answer in exactly this format:"


def build_prompt(
    template: PromptTemplate,
    capability: Capability,
    *,
    user_text: str | None = None,
    context: Mapping[str, str | Mapping[str, str]] | None = None,
) -> list[ChatMessage]:
    """`context` maps a title to a block of data (earlier results, a plan, sections so far)
    or to a group of titled parts (a round's question, results and state); each block, each
    part of a group, and the user text are delimited as data."""
    template.check()
    style = STYLES[capability]
    sections = [template.role or DEFAULT_ROLE]
    lists = {**template.guidelines, **(template.references if style.references else {})}
    sections += [
        style.section(title.upper(), style.items(rules)) for title, rules in lists.items() if rules
    ]
    sections.append(_instructions(template, style))
    sections.append(_output_format(template, style))
    shown = template.examples[: style.max_examples]
    if shown:
        sections.append(_examples(template, shown, style))
    for title, data in (context or {}).items():
        lines = data_block(title.upper(), data) if isinstance(data, str) else data_parts(data)
        sections.append(style.section(title.upper(), lines))
    if user_text is not None:
        sections.append(style.section("USER TEXT", data_block("USER TEXT", user_text)))
    return [
        ChatMessage(role="system", content=template.system or DEFAULT_SYSTEM),
        ChatMessage(role="user", content="\n\n".join(sections) + "\n"),
    ]


def _instructions(template: PromptTemplate, style: Style) -> str:
    lines = [f"{field.name}: {field.instruction}" for field in template.fields]
    return style.section(
        "INSTRUCTIONS",
        [template.instructions or DEFAULT_INSTRUCTIONS, *style.items(lines, numbered=True)],
    )


def _output_format(template: PromptTemplate, style: Style) -> str:
    lines = [f"{field.name}: <{field.format}>" for field in template.fields if field.format]
    return style.section("OUTPUT FORMAT", [template.output_format or DEFAULT_OUTPUT_FORMAT, *lines])


def _examples(template: PromptTemplate, shown: list[Example], style: Style) -> str:
    blocks = ["\n".join(_example(template, example)) for example in shown]
    return style.section("EXAMPLES", ["\n\n".join(blocks)])


def _example(template: PromptTemplate, example: Example) -> list[str]:
    lines = [f"USER TEXT: {json.dumps(example.user_text, ensure_ascii=False)}"]
    if isinstance(example.answer, str):
        return [*lines, example.answer]
    order = [field.name for field in template.fields if field.name in example.answer]
    order += [name for name in example.answer if name not in order]
    return lines + [f"{name}: {example.answer[name]}" for name in order]
