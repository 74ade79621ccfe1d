"""`python -m postel` is the `postel` command."""

from postel.infra.cli.main import main

main()
