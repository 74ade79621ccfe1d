"""Domain logic, pure and testable without Redis or arq: prompts, LLM providers, IPV (the
intent), the planner, GASL, generation, validation. A worker calls a service with a decoded
message and gets back the messages to send on (`step.Step`).

Layer rule (tests/contract/test_layers.py): imports messages; imported by workers, infra.store,
infra.runtime, infra.client, infra.web, infra.cli, postel.testing, the benchmarks. Its packages
import each other without a cycle.
"""
