"""The parser's LALR tables are computed once per machine, not once per process: lark keeps
them in the user's cache folder, and a torn or foreign file there is computed again."""

from __future__ import annotations

from pathlib import Path

import pytest
from postel.services.gasl import parser

TEXT = 'FIND nodes WHERE entity_type = "FILM" AS films'


def _fresh_parser() -> object:
    return parser._lark.__wrapped__()  # past the process's own memo


def test_the_tables_are_kept_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTEL_PARSER_CACHE_DIR", str(tmp_path))
    first = _fresh_parser()
    kept = list(tmp_path.glob("gasl-lalr-*.pickle"))
    assert len(kept) == 1 and kept[0].stat().st_size > 10_000
    again = _fresh_parser()
    assert again.parse(TEXT) == first.parse(TEXT)  # type: ignore[attr-defined]


def test_a_torn_cache_file_is_computed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POSTEL_PARSER_CACHE_DIR", str(tmp_path))
    _fresh_parser()
    (kept,) = tmp_path.glob("gasl-lalr-*.pickle")
    kept.write_bytes(kept.read_bytes()[:200])
    assert _fresh_parser().parse(TEXT)  # type: ignore[attr-defined]
    assert kept.stat().st_size > 10_000  # written whole again


def test_without_a_writable_folder_it_parses_uncached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("POSTEL_PARSER_CACHE_DIR", str(blocked / "cache"))
    assert _fresh_parser().parse(TEXT)  # type: ignore[attr-defined]
