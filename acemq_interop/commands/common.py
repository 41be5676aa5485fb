"""What every command shares: exit codes by class, the output files, progress lines."""
from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3
# `run --repeat N`: a figure of the soak (the harness's memory, files, threads, processes,
# temporary folders; the broker's connections and vhosts) grew after the warm-up runs.
EXIT_SOAK = 4
EXIT_INTERRUPTED = 130
OUTPUT_FILES = ("results.json", "junit.xml", "report.html", "summary.md")
EXIT_CODES_HELP = (
    "exit codes: 0 all cells pass; 1 a FAIL, ERROR or XPASS (compare, --baseline: a regression; --repeat, flakes: a verdict that varied); "
    "2 usage or bad input (before any broker starts); 3 infrastructure (broker unreachable or lost); "
    "4 --repeat: the soak saw a figure grow after the first 3 runs (results/soak.py)"
)
VERBOSITY = {"level": 1}  # 0 quiet, 1 progress, 2 verbose
# Progress comes from several threads (the builds beside the broker's start, the cells): a
# line is one write under this lock, or two lines can be spliced ("...its last build)starting
# a private RabbitMQ node ..." broke a test that waits for a line's start).
_LOG_LOCK = threading.Lock()


def log(message: str) -> None:
    from ..core.redact import text

    if VERBOSITY["level"] == 0 and not message.startswith(("peer ", "acemq-interop")):
        return
    line = text(message) + "\n"
    with _LOG_LOCK:
        sys.stderr.write(line)
        sys.stderr.flush()


def peer_dirs(args: argparse.Namespace) -> list[Path]:
    return [Path(p) for p in getattr(args, "peer_dir", None) or []]
