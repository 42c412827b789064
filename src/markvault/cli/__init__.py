"""`vault`, the command line face: click commands over the facade (``cli/main.py``).

``run`` is the console script's entry point; it imports the commands only when called, so
importing this package loads nothing.
"""


def run() -> None:
    from markvault.cli.main import run as run_main

    run_main()
