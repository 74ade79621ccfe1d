"""Test doubles that ship with postel, for its own tests, its benchmarks and users' tests:
a fake OpenAI-compatible endpoint with switchable faults (fake_model.py), a scripted model of
the whole pipeline that any endpoint or client can serve (stage_model.py), the relay stages
that route without service work (relay.py), the oracle model of the continuation contract
(oracle.py) and a Redis Cluster of real servers on loopback (cluster.py).

Layer rule (tests/contract/test_layers.py): imports messages, services, infra.store,
infra.runtime; imported by the benchmarks.
"""
