"""Running workers: the actor loop (actor.py), push wake-ups over arq (wake.py, runner.py,
wire.py), the whole system in one process (local_system.py), riding out outages (outage.py),
settings, the model a process calls (model.py, local_model.py), logging, metrics and traces.
"""
