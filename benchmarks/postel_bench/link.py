"""`postel bench link`: the entity linker and the graph's name index (services.linking).

For each size it generates the QA movie graph (data/qa_movies.py) with that many triples and
its question set, builds the name index and schema card the way `postel graph add` does (one
pass over the nodes, then the relations), and links every question:
- recall@1 and recall@3: the question's gold start entity is the first candidate / among the
  first three (issue 34's target: >= 95 % in the top 3);
- precision@1: of the questions that linked anything, how many put the gold entity first;
- the index's build time, its stored size (name index and card, compressed) and link time.
Printed as measured; the exit code says whether recall@3 holds its target at every size.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from postel.services.linking.aids import build_aids
from postel.services.linking.names import link

from postel_bench.data.qa_movies import qa_movie_graph, questions

RECALL_AT_3_TARGET = 0.95


def run_link(sizes: list[int], question_count: int, seed: int = 7) -> dict[str, Any]:
    rows = []
    for triples in sizes:
        started = time.perf_counter()
        graph = qa_movie_graph(triples, seed)
        generated = time.perf_counter() - started
        asked = questions(graph, question_count, seed)
        relations = (
            (source, target, [str(attrs["keywords"])])
            for source, target, attrs in graph.edges(data=True)
        )
        started = time.perf_counter()
        aids = build_aids(graph.nodes(data=True), relations, graph.is_directed())
        built = time.perf_counter() - started
        fields = aids.to_fields()
        top1 = top3 = linked_any = 0
        link_ms = []
        for question in asked:
            started = time.perf_counter()
            found = [entity.id for entity in link(question.text, aids.names)]
            link_ms.append((time.perf_counter() - started) * 1000)
            top1 += found[:1] == [question.start]
            top3 += question.start in found[:3]
            linked_any += bool(found)
        count = len(asked) or 1
        rows.append(
            {
                "triples": graph.number_of_edges(),
                "nodes": graph.number_of_nodes(),
                "questions": len(asked),
                "recall_at_1": round(top1 / count, 4),
                "recall_at_3": round(top3 / count, 4),
                "precision_at_1": round(top1 / (linked_any or 1), 4),
                "generated_s": round(generated, 2),
                "index_build_s": round(built, 2),
                "index_names": len(aids.names.names),
                "stored_bytes": {name: len(value) for name, value in fields.items()},
                "link_ms_p50": round(statistics.median(link_ms), 2) if link_ms else None,
                "link_ms_max": round(max(link_ms), 2) if link_ms else None,
            }
        )
    holds = all(row["recall_at_3"] >= RECALL_AT_3_TARGET for row in rows)
    return {"sizes": rows, "target_recall_at_3": RECALL_AT_3_TARGET, "holds": holds}


def format_link(figures: dict[str, Any]) -> str:
    lines = [
        f"{'triples':>10}{'nodes':>9}{'qs':>5}{'R@1':>8}{'R@3':>8}{'P@1':>8}"
        f"{'build s':>9}{'names':>9}{'index KB':>10}{'card KB':>9}{'link ms p50/max':>18}"
    ]
    for row in figures["sizes"]:
        stored = row["stored_bytes"]
        lines.append(
            f"{row['triples']:>10,}{row['nodes']:>9,}{row['questions']:>5}"
            f"{row['recall_at_1']:>8.1%}{row['recall_at_3']:>8.1%}{row['precision_at_1']:>8.1%}"
            f"{row['index_build_s']:>9}{row['index_names']:>9,}"
            f"{stored['name_index'] / 1024:>10.0f}{stored['schema_card'] / 1024:>9.1f}"
            f"{row['link_ms_p50']:>11} / {row['link_ms_max']}"
        )
    verdict = "holds" if figures["holds"] else "MISSED"
    lines.append(
        f"target: recall@3 >= {figures['target_recall_at_3']:.0%} at every size: {verdict}"
    )
    return "\n".join(lines)
