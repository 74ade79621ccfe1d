"""What a caller uses from Python or a script: `Client` (client.py), `reason()` (reason.py),
one job wherever the system runs (session.py), and export/replay of a job (replay.py).

Layer rule (tests/contract/test_layers.py): imports messages, services, infra.store,
infra.runtime; imported by infra.web, infra.cli, the benchmarks. infra's rooms import only down
their order: store < runtime < client < web < cli.
"""
