"""Redis as postel's store: every key, record, stream and script, and the connections to it.

keys.py names every key once; jobs.py (the job record), events.py (the event streams),
commit.py (a hop's atomic commit) and wire.py (arq's JSON wire format), deadletter.py,
calls.py (recorded model calls), stores.py (the services' per-job state), graphs.py (the
graph registry), budgets.py (shared model rate budgets); connect.py and redis_server.py
reach a Redis, and outage.py rides out the times it cannot be reached.

Layer rule (tests/contract/test_layers.py): imports messages, services; imported by workers,
infra.runtime, infra.client, infra.web, infra.cli, postel.testing, the benchmarks. infra's rooms
import only down their order: store < runtime < client < web < cli. Only job_stores.py builds an
EventLog.
"""
