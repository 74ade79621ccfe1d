"""Cassettes: the file a scripted provider replays and a recording provider writes.

Format: a JSON list of entries, each an object::

    [
      {"match": "capital of France", "response": "Paris", "finish_reason": "stop"},
      {"match": "^Summarise", "regex": true, "scope": "any", "response": "..."},
      {"response": "served to whatever request comes next"}
    ]

- ``response`` (required): the text the model answers.
- ``match`` (optional): a substring the request must contain; with ``"regex": true`` a Python
  regular expression searched for instead. No ``match`` matches any request.
- ``scope``: where to look — ``"last_user"`` (default, the last user message) or ``"any"``
  (any message, system included).
- ``finish_reason``: default ``"stop"``.
- ``verbatim``: default false. False entries are cut at the request's ``max_tokens`` (by
  `services.llm.tokens`) and then finish with ``"length"``, as a real model would; recorded
  entries are true, so a real run replays exactly as it happened.
- ``usage`` / ``model`` (optional): reported instead of an estimate / ``"scripted"``.

Each entry is served at most once. A request takes the first unused entry that matches it,
so entries without ``match`` are served in file order and entries with one are served by
content."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Literal

from postel.services.llm.models import STOP, FinishReason, LLMRequest, Usage
from pydantic import BaseModel, ConfigDict, TypeAdapter, model_validator


class CassetteEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    match: str | None = None
    regex: bool = False
    scope: Literal["last_user", "any"] = "last_user"
    response: str
    finish_reason: FinishReason = STOP
    verbatim: bool = False
    usage: Usage | None = None
    model: str | None = None

    @model_validator(mode="after")
    def _pattern_compiles(self) -> CassetteEntry:
        if self.regex and self.match is not None:
            re.compile(self.match)
        return self

    def matches(self, request: LLMRequest) -> bool:
        if self.match is None:
            return True
        texts = (
            [request.last_user_message()]
            if self.scope == "last_user"
            else [message.content for message in request.messages]
        )
        if self.regex:
            return any(re.search(self.match, text) for text in texts)
        return any(self.match in text for text in texts)


_ENTRIES = TypeAdapter(list[CassetteEntry])


def load_cassette(path: str | Path) -> list[CassetteEntry]:
    return _ENTRIES.validate_json(Path(path).read_bytes())


def save_cassette(path: str | Path, entries: list[CassetteEntry]) -> None:
    """Write atomically, so a run killed mid-write still leaves the last complete cassette."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _ENTRIES.dump_json(entries, indent=2, exclude_defaults=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data + b"\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
