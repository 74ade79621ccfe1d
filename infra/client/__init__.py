"""What a caller uses from Python or a script: `Client` (client.py), `reason()` (reason.py),
one job wherever the system runs (session.py), and export/replay of a job (replay.py)."""
