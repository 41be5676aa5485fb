"""The `acemq-interop` program's entry point: Ctrl-C and SIGTERM are the harness's from its
first statement, before the command line's modules (a few hundred milliseconds of imports)
load. A signal that early is recorded, and the run that follows says it was interrupted
instead of leaving an earlier run's results in --out (core/signals.py)."""
from __future__ import annotations


def main() -> int:
    from ..core import signals

    signals.install()
    from .cli import main as cli_main

    return cli_main()
