"""One module per worker kind (intent, planner, gasl, generator, validator), each a `WORKER`
spec: decode the message, call its service, hand the outcome to the runtime
(infra/runtime/runner.py loads the module by its name).

Layer rule (tests/contract/test_layers.py): imports messages, services, infra.store,
infra.runtime; imported by the benchmarks. infra loads a worker by its name, never by an import.
"""
