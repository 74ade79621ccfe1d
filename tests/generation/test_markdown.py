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
