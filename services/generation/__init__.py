"""The generator's AI loop, pure (seed 002, Phase 3): complete JSON = stop, cut-off JSON =
continue. See `loop` for the decisions, `merge` for the continuation contract, `oracle` for
the perfect model used by tests and `bench`."""
