"""What the README and docs/ say about security agrees with itself and with the code: the
replay promise names `--strict` wherever it is made (a replay without it may call the
stage's model), and a producer in JavaScript is told which ajv build reads the published
schemas (draft 2020-12)."""

from __future__ import annotations

import re
from pathlib import Path

from postel.infra.web.security import LOGIN_TRIES, MIN_TOKEN_CHARS

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _text() -> str:
    return "\n".join(re.sub(r"\s+", " ", page.read_text()) for page in PAGES)


def test_every_promise_that_replay_calls_no_live_endpoint_names_strict() -> None:
    text = _text()
    promises = re.findall(r"`postel replay[^`]*` never calls a live endpoint", text)
    assert promises, "the promise is made somewhere"
    assert all("--strict" in promise for promise in promises), promises
    assert "without `--strict`" in text.lower() or "Without `--strict`" in text


def test_the_docs_name_ajvs_2020_build_and_the_token_rules() -> None:
    text = _text()
    assert "`ajv/dist/2020`" in text
    security = re.sub(r"\s+", " ", (ROOT / "docs" / "SECURITY.md").read_text())
    assert f"{MIN_TOKEN_CHARS} characters at least" in security
    assert f"{LOGIN_TRIES} wrong tokens within 60 s" in security
