"""postel's benchmarks: the `postel bench` commands, the baselines they measure against, and
the data they share with postel's tests. A distribution of its own, postel-bench
(benchmarks/pyproject.toml), so a runtime install of postel carries none of it.

- cli.py: the `bench` click group, registered under the entry-point group `postel.commands`,
  and the commands' options;
- one module per benchmark (bus, web, loop, qa, gasl, graphs, chaos; plan_parse, qa_planners,
  bus_worker and loop_bus are parts of them);
- baselines/: former postel code paths a benchmark measures today's against, in the same run;
- data/: the movie knowledge graphs and the loop documents, defined once for the benchmarks
  and the tests.

Layer rule (tests/contract/test_layers.py): imports any room of postel; imported by nothing of
postel. infra's rooms import only down their order: store < runtime < client < web < cli < the
benchmarks. Nothing of postel names them.
"""
