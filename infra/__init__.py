"""The outside world, in rooms by role: store/ (Redis: keys, records, scripts, connections),
runtime/ (running workers), client/ (Python callers), web/ (the HTTP API and dashboard) and
cli/ (the command line). The benchmarks are a distribution of their own (benchmarks/).
docs/ARCHITECTURE.md has the map.

Layer rule (tests/contract/test_layers.py): imports nothing of postel; imported by the
benchmarks. infra's rooms import only down their order: store < runtime < client < web < cli.
"""
