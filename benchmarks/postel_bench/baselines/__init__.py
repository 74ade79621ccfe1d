"""Baselines that reproduce a former postel code path, kept so a benchmark measures today's
path against yesterday's in the same run on the same machine (a figure recorded once, on
another day and load, compares nothing). Each module says what it reproduces, which
benchmark runs it and why it is kept. Nothing of postel's runtime imports them; a baseline
that no benchmark runs any more is deleted, not kept.

- polling_worker: a postel worker on arq's own Worker, polling every 5 ms (`postel bench bus`,
  side `postel_poll`);
- graphml_path: adding and loading a graph by parsing GraphML with networkx
  (`postel bench graphs`, the "former" column).
"""
