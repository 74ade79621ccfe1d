from postel.services.generation.markdown import to_markdown


def test_every_content_type_renders() -> None:
    document = {
        "sections": [
            {"id": "h", "content_type": "heading", "elements": [{"level": 2, "text": "Title"}]},
            {"id": "p", "content_type": "paragraph", "elements": [{"text": "Body [chunk-1]."}]},
            {"id": "b", "content_type": "bullet_list", "elements": [{"items": ["a", "b"]}]},
            {"id": "n", "content_type": "numbered_list", "elements": [{"items": ["x"]}]},
            {
                "id": "t",
                "content_type": "table",
                "elements": [{"headers": ["who", "with"], "rows": [["A", "B"]]}],
            },
            {
                "id": "c",
                "content_type": "code_block",
                "elements": [{"language": "sql", "code": "SELECT 1"}],
            },
        ]
    }
    assert to_markdown(document) == (
        "## Title\n\nBody [chunk-1].\n\n- a\n- b\n\n1. x\n\n| who | with |\n|---|---|\n"
        "| A | B |\n\n```sql\nSELECT 1\n```"
    )


def test_words_under_the_other_field_name_are_shown_not_an_empty_block() -> None:
    """What the bundled model once wrote: code blocks whose words are under `text`; the demo
    printed two empty fences for a document the validator had accepted for those words."""
    document = {
        "sections": [
            {
                "id": "c",
                "content_type": "code_block",
                "elements": [{"text": "The answer is here."}, {"code": "x = 1"}],
            },
            {"id": "p", "content_type": "paragraph", "elements": [{"code": "print(1)"}]},
        ]
    }
    assert to_markdown(document) == "```\nThe answer is here.\n```\n\n```\nx = 1\n```\n\nprint(1)"
