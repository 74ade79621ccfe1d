"""The outside world, in rooms by role: store/ (Redis: keys, records, scripts, connections),
runtime/ (running workers), client/ (Python callers), cli/ (the command line), web/ (the HTTP
API and dashboard) and bench/ (the benchmarks). docs/ARCHITECTURE.md has the map."""
