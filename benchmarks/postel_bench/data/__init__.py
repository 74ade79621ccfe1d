"""Data the benchmarks and postel's tests share, defined once and generated from a seed.

- scale_movies: the scale movie graph, a knowledge graph of any size with plain, unique
  names, for how fast graphs are added and loaded (`postel bench graphs`, the graph-format
  tests);
- qa_movies: the QA movie graph, with names that are hard to quote (years in titles,
  initials), its questions and their oracle answers (`postel bench qa`, the planner tests);
- documents: the sections documents the oracle model writes (`postel bench loop`, the AI
  loop's tests), and the shipped loop_document.json.

They live with the benchmarks, not in postel.testing: only the benchmarks and postel's own
tests use them, and the tests run where the benchmarks are installed (the dev install), so a
runtime install carries no benchmark workload. postel.testing keeps the test doubles a user's
own tests run against postel (the fake model endpoint, relay stages, the oracle, clusters).
"""
