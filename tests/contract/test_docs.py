"""The documentation's shape: the README is a front door of at most 250 lines, and every
relative link in it and in docs/*.md names a file that exists and, with a `#fragment`, a
heading of that file (GitHub's anchors: lower case, punctuation dropped, spaces as `-`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 250
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.MULTILINE)


def prose(text: str) -> str:
    """The text without code: a link shown in a code block or span is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    words = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return words.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and fragment not in anchors(linked):
            broken.append(f"{target}: no such heading in {linked.name}")
    return broken


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path) -> None:
    assert not broken_links(page), broken_links(page)


def test_the_readme_links_every_docs_page() -> None:
    readme = prose((ROOT / "README.md").read_text(encoding="utf-8"))
    linked = {target.partition("#")[0] for target in LINK.findall(readme)}
    pages = {f"docs/{page.name}" for page in PAGES[1:]}
    assert pages <= linked, f"docs pages the README does not link: {sorted(pages - linked)}"


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Fault drills: `postel bench chaos`", "fault-drills-postel-bench-chaos"),
        ("One job's walk, from `submit` to the result", "one-jobs-walk-from-submit-to-the-result"),
        ("Where to look for…", "where-to-look-for"),
        ("DECLARE — create a state key", "declare--create-a-state-key"),
    ],
)
def test_anchors_are_githubs(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A section\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-section) [gone](missing.md) [wrong](other.md#no-such)"
        " `[code](missing.md)` [web](https://example.com/x)\n"
    )
    found = [line.split(":")[0] for line in broken_links(page)]
    assert found == ["missing.md", "other.md#no-such"]
