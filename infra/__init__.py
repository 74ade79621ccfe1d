"""The outside world: Redis, processes, HTTP, the command line."""

from postel.infra.redis_packing import pack_with_hiredis

# Every postel process that talks to Redis imports this package first.
pack_with_hiredis()
