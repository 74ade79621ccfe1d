"""`python -m postel` is the `postel` command.

Layer rule (tests/contract/test_layers.py): imports infra.cli; imported by the benchmarks.
"""

from postel.infra.cli.main import main

main()
