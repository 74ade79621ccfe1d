"""How much prompt structure a model can follow; set per model in its settings."""

from __future__ import annotations

from enum import StrEnum


class Capability(StrEnum):
    MINIMAL = "minimal"  # small local models: plain headers, no list markup, no examples
    LIMITED = "limited"  # mid-size models: banner headers, bullets, two examples
    STANDARD = "standard"  # capable models: markdown headers, numbered fields, every example
