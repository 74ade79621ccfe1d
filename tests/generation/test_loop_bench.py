import json

import pytest
from postel_bench.data.documents import LOOP_DOCUMENT, repetitive_document, sample_document
from postel_bench.loop import format_loop_bench, run_loop_bench, scale_study, scaled


def test_run_loop_bench_reassembles_and_reports() -> None:
    report = run_loop_bench(sample_document(12), 300)
    assert report["document_equal"] and report["final_decision"] == "complete"
    assert report["llm_calls"] == report["min_llm_calls"]
    assert len(report["iterations"]) == report["llm_calls"]
    text = format_loop_bench(report)
    assert "LLM calls" in text and "naive" in text


def test_continuation_prompts_stop_growing_once_the_summary_is_capped() -> None:
    study = scale_study(sample_document(12), factors=(1, 20, 40), max_tokens=1000)
    rows = {row["factor"]: row for row in study["factors"]}
    assert all(row["document_equal"] for row in rows.values())
    assert rows[20]["max_summary_lines"] == rows[40]["max_summary_lines"] == 201
    # Past the cap the prompt moves only with the cut-off element (one response at most).
    assert (
        abs(rows[40]["max_continuation_prompt_tokens"] - rows[20]["max_continuation_prompt_tokens"])
        <= 1000
    )
    assert "scale study" in format_loop_bench(study)


def test_scaled_keeps_ids_unique() -> None:
    ids = [s["id"] for s in scaled(sample_document(6), 3)["sections"]]
    assert len(ids) == len(set(ids)) == 18


def test_a_paragraph_longer_than_max_tokens_takes_the_minimum_calls() -> None:
    text = " ".join(f"word{n}" for n in range(400))
    document = {
        "sections": [{"id": "p", "content_type": "paragraph", "elements": [{"text": text}]}]
    }
    report = run_loop_bench(document, 200)
    assert report["document_equal"] and report["final_decision"] == "complete"
    assert report["llm_calls"] == report["min_llm_calls"] > 2


def test_the_shipped_bench_document_is_the_repetitive_document() -> None:
    assert json.loads(LOOP_DOCUMENT.read_text(encoding="utf-8")) == repetitive_document()


@pytest.mark.parametrize("max_tokens", [16, 48, 200])
def test_the_repetitive_document_takes_the_minimum_calls(max_tokens: int) -> None:
    # Its code blocks repeat lines, so cut answers repeat each other: still progress.
    report = run_loop_bench(repetitive_document(), max_tokens)
    assert report["document_equal"] and report["final_decision"] == "complete"
    assert report["llm_calls"] == report["min_llm_calls"]
