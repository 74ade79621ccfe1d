"""Reading a sections document (the generator's output format, messages.document)."""

from __future__ import annotations

from typing import Any

from postel.messages.document import SectionsDocument
from postel.services.validation.errors import CoercionError
from postel.services.validation.structured import load_json
from pydantic import ValidationError

_EXPECTED = 'a sections document {"sections": [...]}'
_SHOWN_PROBLEMS = 3


def read_document(raw: Any) -> dict[str, Any]:
    """A validated sections document as plain JSON data. A bare list of sections is accepted
    as the document's `sections`."""
    value = load_json(raw, expected=_EXPECTED) if isinstance(raw, str) else raw
    if isinstance(value, list):
        value = {"sections": value}
    if not isinstance(value, dict):
        raise CoercionError.mismatch(_EXPECTED, raw, "not a JSON object")
    if "sections" not in value:
        raise CoercionError("required field 'sections' is missing").within(".sections")
    try:
        document = SectionsDocument.model_validate(value)
    except ValidationError as error:
        problems = [f"at ${_path(e['loc'])}: {e['msg']}" for e in error.errors()[:_SHOWN_PROBLEMS]]
        raise CoercionError(f"not a valid sections document: {'; '.join(problems)}") from None
    return document.model_dump(mode="json", exclude_none=True)


def _path(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
