"""`acemq-interop compare`, `merge` and `publish`: what is done with results.json files."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..core.errors import UsageError
from .common import EXIT_FAILED, EXIT_OK, log
from .run import write_outputs


def cmd_compare(args: argparse.Namespace) -> int:
    from ..results.compare import as_markdown, as_text, compare
    from ..results.files import read_results

    old, new = read_results(Path(args.old)), read_results(Path(args.new))
    comparison = compare(old, new)
    print(as_markdown(comparison, args.old, args.new) if args.markdown else as_text(comparison, args.old, args.new))
    return EXIT_FAILED if comparison.regressed else EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    from ..results.merge import merge_files

    report = merge_files([Path(p) for p in args.shards])
    paths = write_outputs(report, Path(args.out))
    from ..reports.console import print_report

    print_report(report)
    print(f"Merged {len(args.shards)} shard(s); wrote {', '.join(str(p) for p in paths)}")
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_publish(args: argparse.Namespace) -> int:
    """A static site from several runs' results.json (issue 13)."""
    from ..reports.publish import publish

    missing = [p for p in args.results if not Path(p).is_file()]
    if missing:
        raise UsageError(f"publish: no such results.json: {', '.join(missing)}")
    index = publish([Path(p) for p in args.results], Path(args.site), args.docs_url, log)
    print(f"Wrote {index} ({len(args.results)} run(s))")
    return EXIT_OK
