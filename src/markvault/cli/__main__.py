"""`python -m markvault.cli.main`: the `vault` command without its console script."""

from markvault.cli.main import run

run()
