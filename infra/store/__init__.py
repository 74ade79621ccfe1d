"""Redis as postel's store: every key, record, stream and script, and the connections to it.

keys.py names every key once; jobs.py (the job record), events.py (the event streams),
commit.py (a hop's atomic commit), submit.py, cancel.py, redrive.py and ingress.py (the ways a
job enters, stops or comes back), deadletter.py, calls.py (recorded model calls), stores.py
(the services' per-job state), graphs.py (the graph registry), budgets.py (shared model rate
budgets), presence.py (live worker processes); connect.py and redis_server.py reach a Redis.
"""
