"""Running the bus: the actor loop (actor.py), push wake-ups over arq (wake.py, runner.py),
the ways a job enters, stops or comes back (submit.py, ingress.py, cancel.py, redrive.py),
the whole system in one process (local_system.py), live processes (presence.py), settings,
the model a process calls (model.py, local_model.py), logging and traces.

Layer rule (tests/contract/test_layers.py): imports messages, services, infra.store; imported by
workers, infra.client, infra.web, infra.cli, postel.testing, the benchmarks. infra's rooms
import only down their order: store < runtime < client < web < cli.
"""
