"""The outside world, in rooms by role: store/ (Redis: keys, records, scripts, connections),
runtime/ (running workers), client/ (Python callers), cli/ (the command line), web/ (the HTTP
API and dashboard) and bench/ (the benchmarks). docs/ARCHITECTURE.md has the map."""

from postel.infra.store.redis_packing import pack_with_hiredis

# Every postel process that talks to Redis imports this package first.
pack_with_hiredis()
