"""Fuzzers at two sizes: small in every test run, full as a benchmark that prints counts.

    python3 -m pytest tests/fuzz -q -s                      # the CI size
    POSTEL_FUZZ_EXAMPLES=10000 python3 -m pytest tests/fuzz -q -s --timeout 0   # the full size

Each fuzzer (tests/fuzz/test_fuzz_*.py) decorates its test with `fuzz_settings` (`from
support.fuzz import fuzz_settings`: tests/support, on pytest's pythonpath) and prints a line of
counts."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

FUZZ_EXAMPLES = int(os.environ.get("POSTEL_FUZZ_EXAMPLES", "200"))

fuzz_settings = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
