"""How each capability level lays out a prompt."""

from __future__ import annotations

from dataclasses import dataclass

from postel.services.prompts.capability import Capability


@dataclass(frozen=True)
class Style:
    header: str  # a format string around the section title
    bullet: str
    numbered: bool  # number the output fields instead of bulleting them
    # Small models copy a worked example instead of doing the task (SmolLM2-135M returned
    # the intent example verbatim for 3 of 3 other requests), so Minimal shows none.
    max_examples: int | None
    # A template's reference lists (GASL's rarer commands): only the 3,000-token round
    # budget of capable models has room for them besides the round's data.
    references: bool

    def section(self, title: str, lines: list[str]) -> str:
        return "\n".join([self.header.format(title=title), *lines])

    def items(self, texts: list[str], *, numbered: bool = False) -> list[str]:
        if numbered and self.numbered:
            return [f"{index}. {text}" for index, text in enumerate(texts, start=1)]
        return [f"{self.bullet}{text}" for text in texts]


STYLES: dict[Capability, Style] = {
    Capability.MINIMAL: Style(
        header="[{title}]", bullet="", numbered=False, max_examples=0, references=False
    ),
    Capability.LIMITED: Style(
        header="==={title}===", bullet="- ", numbered=False, max_examples=2, references=False
    ),
    Capability.STANDARD: Style(
        header="## {title}", bullet="- ", numbered=True, max_examples=None, references=True
    ),
}
