"""`python -m postel` is the `postel` command."""

from postel.infra.cli import main

main()
