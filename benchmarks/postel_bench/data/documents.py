"""The loop documents: sections documents the oracle model writes in `postel bench loop` and
in the tests of the AI loop, generated deterministically, and the shipped bench document.

`LOOP_DOCUMENT` (loop_document.json beside this module) is `repetitive_document()` written
out, so a person can pass it to `postel bench loop --document`; a test keeps the two equal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LOOP_DOCUMENT = Path(__file__).with_name("loop_document.json")


def sample_document(sections: int = 12) -> dict[str, Any]:
    """A deterministic document with every content type, unicode, escapes and numbers."""
    kinds = ["heading", "paragraph", "bullet_list", "table", "code_block", "numbered_list"]
    result = []
    for index in range(sections):
        kind = kinds[index % len(kinds)]
        element: dict[str, Any]
        if kind == "heading":
            element = {"level": 1 + index % 3, "text": f"Kapitel {index}: Übersicht «{index}»"}
        elif kind == "paragraph":
            element = {"text": f'Absatz {index} — "quoted", back\\slash, tab\t, ü ✓. ' * 6}
        elif kind in ("bullet_list", "numbered_list"):
            element = {"items": [f"Punkt {index}.{item} — ß" for item in range(12)]}
        elif kind == "table":
            element = {
                "headers": ["Artikel", "Preis", "Menge"],
                "rows": [[f"Ware {index}.{row}", 29.99 + row, row] for row in range(20)],
            }
        else:
            code = "\n".join(f'    print("line {line}", {line} * 2)' for line in range(15))
            element = {"language": "python", "code": f"def f{index}():\n{code}\n"}
        result.append({"id": f"s{index}", "content_type": kind, "elements": [element]})
    return {"sections": result}


REPETITIVE_TITLE = 'café é αβγ Ελληνικά 中文 ✓ "quoted" & <tags>'


def repetitive_document(parts: int = 12, code_lines: int = 9) -> dict[str, Any]:
    """A deterministic document whose answers look alike: `parts` + 1 headings and
    paragraphs with non-ASCII, quotes and angle brackets; `parts` bullet lists, tables of
    numbers and python code blocks of near-identical lines with escaped backslashes inside
    strings (many of them identical, so cut answers repeat each other). The shipped bench
    document, LOOP_DOCUMENT, is this with its defaults: 7,048 tokens."""
    line = "    return x * {k} + \"{{}}\".format('\\\\n')"
    sections: list[dict[str, Any]] = []
    for part in range(parts + 1):
        sections += [
            {
                "id": f"h{part}",
                "content_type": "heading",
                "elements": [{"level": 2, "text": f"Part {part}: {REPETITIVE_TITLE}"}],
            },
            {
                "id": f"p{part}",
                "content_type": "paragraph",
                "elements": [{"text": f"Part {part} of the {REPETITIVE_TITLE} notes. " * 2}],
            },
        ]
        if part == parts:
            break
        code = "def f(x):\n" + "".join(
            line.format(k=3 if n % 4 else 3 + part % 2) + "\n" for n in range(code_lines)
        )
        sections += [
            {
                "id": f"b{part}",
                "content_type": "bullet_list",
                "elements": [{"items": [f"item ✓ {REPETITIVE_TITLE}" for _ in range(5)]}],
            },
            {
                "id": f"t{part}",
                "content_type": "table",
                "elements": [
                    {
                        "headers": ["n", "x", "x * 1.5"],
                        "rows": [[str(row), str(part), f"{part * 1.5:.2f}"] for row in range(6)],
                    }
                ],
            },
            {
                "id": f"c{part}",
                "content_type": "code_block",
                "elements": [{"language": "python", "code": code}],
            },
        ]
    return {"sections": sections}
