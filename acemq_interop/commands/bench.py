"""`acemq-interop bench`: each binding's request/reply rate, measured inside its peer against
its raw client, repeated and interleaved (run/bench.py, run/bench_plan.py); the figures'
medians, spreads and ratios (results/bench.py), printed and written as bench.json, bench.md
and, with --readme, the README's bench region (reports/bench.py)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..broker.endpoint import parse_broker_url
from ..broker.lifecycle import BrokerSource
from ..peers.manifests import discover, parse_peer_list
from ..reports.bench import check_readme, comparison_text, markdown, print_bench, write_views
from ..results.bench import BenchResult, BenchSettings, bench_data, bench_from_data, compare_ratios, read_bench
from ..run.bench import BenchRequest, run_bench
from .common import EXIT_OK, log, peer_dirs


def _measured(args: argparse.Namespace, out: Path) -> BenchResult:
    if args.render:  # an earlier bench shown and quoted again: nothing measured
        return bench_from_data(read_bench(Path(args.render), current=True))
    manifests = discover(extra=peer_dirs(args))
    specs = parse_peer_list(args.peers or ",".join(sorted(manifests)), manifests)
    broker = BrokerSource.given(parse_broker_url(args.broker, args.management_url)) if args.broker else BrokerSource("node")
    settings = BenchSettings(requests=args.requests, repetitions=args.repetitions, in_flight=args.in_flight,
                             body_bytes=args.body_bytes, warmup=args.warmup, pair_requests=args.pair_requests,
                             pair_repetitions=args.pair_repetitions, seed_requests=args.seed_requests,
                             pairs=not args.no_pairs, bound=args.bound)
    settings.check()
    return run_bench(BenchRequest(manifests, [s.name for s in specs], broker, settings, out / "bench-logs", log))


def cmd_bench(args: argparse.Namespace) -> int:
    out, readme = Path(args.out), Path(args.readme) if args.readme else None
    # Refused before anything starts: an unreadable --compare or a README without its region.
    old = read_bench(Path(args.compare)) if args.compare else None
    if readme is not None:
        check_readme(readme)
    result = _measured(args, out)
    paths = write_views(result, out, readme)
    if args.markdown:
        print(markdown(result), end="")
    else:
        print_bench(result)
    if old is not None:
        print(comparison_text(compare_ratios(old, bench_data(result)), result.settings.bound))
    print(f"Wrote {', '.join(str(p) for p in paths)}" + ("" if args.render else f"; peer logs in {out / 'bench-logs'}"))
    return EXIT_OK
