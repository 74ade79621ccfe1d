"""The `postel` command line, one module per command group: jobs.py, dead.py, graph.py,
gasl.py, serve.py, replay.py; main.py holds the `main` group (and demo, schema) and adds the
others' commands. client_command.py has `with_client`, which runs a command against the
system; support.py the exit codes and settings every command shares.

Layer rule (tests/contract/test_layers.py): imports messages, services, infra.store,
infra.runtime, infra.client, infra.web; imported by postel.__main__, the benchmarks. infra's
rooms import only down their order: store < runtime < client < web < cli. `postel --help` loads,
of postel, only the command line's own modules (listed in
test_postel_help_loads_no_heavy_module) and infra/runtime/names.py, and of the benchmarks only
the module that defines `bench`: no pydantic, Redis, arq, structlog, httpx, networkx, GASL, web
app or bundled model.
"""
