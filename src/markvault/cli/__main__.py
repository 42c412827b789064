"""`python -m markvault.cli`: the `vault` command without its console script."""

from markvault.cli import run

run()
