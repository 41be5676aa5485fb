"""What every command shares: exit codes by class, the output files, progress lines."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3
EXIT_INTERRUPTED = 130
OUTPUT_FILES = ("results.json", "junit.xml", "report.html", "summary.md")
EXIT_CODES_HELP = (
    "exit codes: 0 all cells pass; 1 a FAIL, ERROR or XPASS (compare, --baseline: a regression; --repeat, flakes: a verdict that varied); "
    "2 usage or bad input (before any broker starts); 3 infrastructure (broker unreachable or lost)"
)
VERBOSITY = {"level": 1}  # 0 quiet, 1 progress, 2 verbose


def log(message: str) -> None:
    from ..core.redact import text

    if VERBOSITY["level"] == 0 and not message.startswith(("peer ", "acemq-interop")):
        return
    print(text(message), file=sys.stderr, flush=True)


def peer_dirs(args: argparse.Namespace) -> list[Path]:
    return [Path(p) for p in getattr(args, "peer_dir", None) or []]
