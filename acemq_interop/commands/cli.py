"""The `acemq-interop` command line: its parser, and `main`, which maps what went wrong to an
exit code by class (commands/common.py). Each subcommand lives in its own module: run.py
(run, flakes), inspect.py (list, doctor), results.py (compare, merge, publish), bench.py.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys

from ..core import signals
from ..core.errors import BrokerError, UsageError
from ..core.redact import BROKER_ENV
from ..results.bench import BenchSettings
from ..run.request import DEFAULT_CONCURRENCY
from .bench import cmd_bench
from .common import EXIT_CODES_HELP, EXIT_INFRA, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, VERBOSITY
from .inspect import cmd_doctor, cmd_list
from .results import cmd_compare, cmd_merge, cmd_publish
from .run import cmd_flakes, cmd_run


MAX_SAID = 4000  # characters of one error message: a 120 KB argument is never echoed whole
MAX_WORD = 300  # characters of one word of it (an argument quoted in it)


def said(message: str) -> str:
    """An error message as printed: every password hidden, each over-long word (an argument
    quoted whole) cut, the whole bounded."""
    from ..core.redact import text

    def cut(word: "re.Match[str]") -> str:
        whole = word.group(0)
        return f"{whole[:MAX_WORD]}...({len(whole)} characters)"

    message = re.sub(r"\S{%d,}" % (MAX_WORD + 1), cut, text(message))
    return message if len(message) <= MAX_SAID else f"{message[:MAX_SAID]}...({len(message)} characters)"


class Parser(argparse.ArgumentParser):
    """argparse, with its own error messages said as every other one: no password, bounded."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {said(message)}\n")


def _rerun(action: argparse.Action) -> argparse.Action:
    """Marks a `run` option that shapes how a cell behaves: a rerun line repeats it
    (commands/run.py's rerun_flags reads the marks)."""
    action.rerun = True  # type: ignore[attr-defined]
    return action


def build_parser() -> argparse.ArgumentParser:
    from ..core.suite_info import version

    parser = Parser(prog="acemq-interop", epilog=EXIT_CODES_HELP,
                                     description="Cross-language interop conformance for acemq request/reply and scatter-gather on RabbitMQ.")
    parser.add_argument("--version", action="version", version=f"acemq-interop {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run scenarios between peers and print the matrices", epilog=EXIT_CODES_HELP)
    run.add_argument("--peers", help="comma list of NAME[@PROFILE][+MUTANT] (default: every peer in peers/)")
    run.add_argument("--scenarios", help="comma list of scenario id globs (default: all)")
    _rerun(run.add_argument("--scenario-dir", action="append", metavar="DIR",
                            help="a folder of scenarios kept with a binding, run beside the suite's (repeatable; "
                                 "an id the suite already has is refused)"))
    run.add_argument("--cell", action="append", help="run only this cell id (repeatable; as printed in a rerun line)")
    run.add_argument("--broker", help=f"amqp://USER:PASS@HOST:PORT/ (or amqps://... with --ca-cert) of an existing RabbitMQ (default: ${BROKER_ENV}, else a private node)")
    _rerun(run.add_argument("--management-url", help="management API of --broker (default http://HOST:15672)"))
    _rerun(run.add_argument("--tls", action="store_true",
                     help="over TLS: the private node (or each --broker-image) gets a TLS listener on certificates made for "
                          "the run, and every peer, the probe and the transcript tracer connect with amqps, verifying it; "
                          "a peer without the tls capability is SKIP"))
    _rerun(run.add_argument("--ca-cert", metavar="FILE",
                     help="with --broker amqps://USER:PASS@HOST[:PORT]/ (port 5671 by default): the PEM file of the CA "
                          "that signed the broker's certificate; every client verifies the broker against it"))
    run.add_argument("--cluster", type=int, default=0, metavar="N",
                     help="run on a cluster of N private RabbitMQ nodes (3 is the usual floor for quorum queues), or with "
                          "--broker-image on a cluster of N containers of each image, torn down at the end; selects the cluster scenarios (nodes stopped, killed, restarted under requests) unless "
                          "--scenarios names others")
    run.add_argument("--broker-image", action="append", metavar="IMAGE",
                     help="run on a RabbitMQ container from IMAGE (built from ci/rabbitmq/Dockerfile), removed at the end; "
                          "repeat for a broker axis: every cell on each broker")
    run.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY,
                     help=f"cells run at once, longest first (default {DEFAULT_CONCURRENCY}: 20 per CPU this process may use (its affinity and cgroup quota), "
                          "8 to 64; most cells wait on timers, so they overlap)")
    run.add_argument("--out", default="out", help="folder for results.json, junit.xml, report.html and summary.md (default ./out)")
    _rerun(run.add_argument("--known-failures", action="append", help="an extra known-failures file (known-failures/ is always read)"))
    _rerun(run.add_argument("--no-known-failures", action="store_true", help="ignore the known-failures lists (every failure is a FAIL)"))
    _rerun(run.add_argument("--foreign", action="store_true",
                            help="the foreign-interop matrix: the stacks of foreign/ (not acemq) with every acemq binding, "
                                 "on the catalogue's foreign cases (round trip, failure, timeout, late reply), both directions"))
    run.add_argument("--diagonal", action="store_true", help="only cells where one peer spec plays every role (itself and the probe): for certifying a binding and for mutant runs")
    _rerun(run.add_argument("--op-timeout", type=float, default=20.0, help="seconds a peer has to answer a command that does not wait on the broker (default 20)"))
    _rerun(run.add_argument("--in-docker", action="store_true", help="run each peer from its image (docker run -i --rm --network host IMAGE; build them with docker compose build); a peer whose image is missing is SKIP"))
    run.add_argument("--no-build", action="store_true", help="do not run the peers' build commands")
    _rerun(run.add_argument("--peer-dir", action="append", help="a peer folder (with peer.yaml) or a folder of them, kept outside this suite (repeatable; also $ACEMQ_INTEROP_PEER_PATH)"))
    run.add_argument("--shard", help="K/N: run only the K-th of N deterministic slices of the cells (join them with `merge`)")
    run.add_argument("--durations", help="an earlier results.json: balance --shard and order cells by its durations")
    run.add_argument("--baseline", help="an earlier results.json: print what changed; a regression exits 1")
    run.add_argument("--transcripts", choices=("failed", "all", "none"), default="failed",
                     help="keep the broker's transcript (firehose) of: non-PASS cells (default), every cell, or none")
    run.add_argument("--repeat", type=int, default=1, metavar="N",
                     help="run the same selection N times (2 to 100), each in OUT/run-K/, then report per cell its "
                          "verdicts across the runs, the cells whose verdict varied and a flake rate per peer and scenario "
                          "(OUT/repeat.json, OUT/summary.md, OUT/report.html); a varying cell exits 1")
    _rerun(run.add_argument("--cpu-hog", type=int, default=0, metavar="N",
                     help="stress: N busy processes beside the run (stopped at its end), so a verdict that needs an idle "
                          "machine shows here first; with a --concurrency above the default and --repeat, the suite's own stress mode"))
    run.add_argument("--profile", action="store_true",
                     help="where the time goes: CPU seconds of the harness, the broker and each peer, the harness's own "
                          "profile by function, and the time cells wait on timers and peers against the time they work "
                          "(printed, and OUT/profile.json)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the result")
    run.add_argument("-v", "--verbose", action="store_true", help="more detail in progress lines")
    run.set_defaults(func=cmd_run, parser=run)
    flakes = sub.add_parser("flakes", help="which cells flake: the repeat report of several runs' results.json of one selection",
                            epilog=EXIT_CODES_HELP)
    flakes.add_argument("results", nargs="+", help="the runs' results.json files (two or more)")
    flakes.add_argument("--out", default="out", help="folder for repeat.json, summary.md and report.html (default ./out)")
    flakes.set_defaults(func=cmd_flakes)
    lst = sub.add_parser("list", help="list peers and scenarios")
    lst.add_argument("-v", "--verbose", action="store_true", help="with each scenario's title and procedure")
    lst.add_argument("--rules", action="store_true",
                     help="the clause table instead: every clause, its text, the scenarios asserting it or why none can")
    lst.add_argument("--json", action="store_true",
                     help='the clause table as JSON: [{"rule", "clause", "text", "asserted_by", "unobservable"}] (implies --rules)')
    lst.add_argument("--peer-dir", action="append", help="a peer folder kept outside this suite (repeatable)")
    lst.add_argument("--scenario-dir", action="append", metavar="DIR", help="a folder of scenarios kept with a binding (repeatable)")
    lst.set_defaults(func=cmd_list)
    bench = sub.add_parser("bench", help="each binding's request/reply rate measured inside its peer, against its raw client, "
                           "repeated and interleaved; per pair")
    bench.add_argument("--peers", help="comma list of peer names (default: every peer)")
    bench.add_argument("--peer-dir", action="append", help="a peer folder kept outside this suite (repeatable)")
    bench.add_argument("--requests", type=int, default=BenchSettings.requests,
                       help=f"measured requests per measurement (default {BenchSettings.requests})")
    bench.add_argument("--repetitions", type=int, default=BenchSettings.repetitions,
                       help=f"measurements of each figure, interleaved raw/binding (default {BenchSettings.repetitions})")
    bench.add_argument("--in-flight", type=int, default=BenchSettings.in_flight,
                       help=f"requests outstanding at once (default {BenchSettings.in_flight})")
    bench.add_argument("--body-bytes", type=int, default=BenchSettings.body_bytes,
                       help=f"request body size (default {BenchSettings.body_bytes})")
    bench.add_argument("--warmup", type=int, default=BenchSettings.warmup,
                       help=f"unmeasured requests before each measurement (default {BenchSettings.warmup})")
    bench.add_argument("--pair-requests", type=int, default=BenchSettings.pair_requests,
                       help=f"requests per requester x responder pair (default {BenchSettings.pair_requests})")
    bench.add_argument("--pair-repetitions", type=int, default=BenchSettings.pair_repetitions,
                       help=f"measurements of each pair (default {BenchSettings.pair_repetitions})")
    bench.add_argument("--seed-requests", type=int, default=BenchSettings.seed_requests,
                       help=f"requests with a reply queue per request (default {BenchSettings.seed_requests})")
    bench.add_argument("--bound", type=float, default=BenchSettings.bound,
                       help=f"a ratio whose pairs spread more than this fraction of their median is unstable "
                            f"(default {BenchSettings.bound})")
    bench.add_argument("--no-pairs", action="store_true", help="per peer only, no requester x responder pairs")
    bench.add_argument("--out", default="out", help="folder for bench.json and bench.md (default ./out)")
    bench.add_argument("--markdown", action="store_true", help="print bench.md (the README's table) instead of the console tables")
    bench.add_argument("--readme", metavar="MARKDOWN",
                       help="also rewrite this Markdown file's bench region (docs/performance.md's: between its "
                            "'<!-- bench.md begins' and '<!-- bench.md ends -->' lines) with bench.md")
    bench.add_argument("--render", metavar="BENCH_JSON",
                       help="measure nothing: show, write (--out, --readme) and compare an earlier bench.json's figures")
    bench.add_argument("--compare", help="an earlier bench.json: print each ratio old -> new and whether they agree")
    bench.add_argument("--broker", help="amqp://USER:PASS@HOST:PORT/ of an existing RabbitMQ (default: a private node)")
    bench.add_argument("--management-url", help="management API of --broker (default http://HOST:15672)")
    bench.set_defaults(func=cmd_bench)
    doctor = sub.add_parser("doctor", help="which peers can run here, and why not (commands, versions, client libraries)")
    doctor.add_argument("--peer-dir", action="append", help="a peer folder kept outside this suite (repeatable)")
    doctor.add_argument("--clean", action="store_true", help="remove what killed runs left: containers (by the label org.acemq-interop.run), "
                        "private nodes and vhosts whose recorded owner is dead")
    doctor.add_argument("--broker", help=f"also look for vhosts left on this broker (default: ${BROKER_ENV})")
    doctor.add_argument("--management-url", help="management API of --broker (default http://HOST:15672)")
    doctor.set_defaults(func=cmd_doctor)
    cmp = sub.add_parser("compare", help="what changed between two results.json: new failures, fixes, changed rules", epilog=EXIT_CODES_HELP)
    cmp.add_argument("old", help="the earlier results.json (e.g. the last release's)")
    cmp.add_argument("new", help="the later results.json")
    cmp.add_argument("--markdown", action="store_true", help="GitHub-flavoured Markdown instead of text")
    cmp.set_defaults(func=cmd_compare)
    merge = sub.add_parser("merge", help="join the results.json of --shard runs into one results.json, JUnit, summary and report")
    merge.add_argument("shards", nargs="+", help="the shards' results.json files")
    merge.add_argument("--out", default="out", help="folder for the merged files (default ./out)")
    merge.set_defaults(func=cmd_merge)
    pub = sub.add_parser("publish", help="a static site from several runs: an index, each run's report, badge JSON")
    pub.add_argument("results", nargs="+", help="the runs' results.json files")
    pub.add_argument("--site", required=True, help="the folder to write the site to")
    pub.add_argument("--docs-url", help="base URL of docs/ for rule links (default: $ACEMQ_INTEROP_DOCS_URL, else relative)")
    pub.set_defaults(func=cmd_publish)
    return parser


def main(argv: list[str] | None = None) -> int:
    from ..core import redact

    given = list(argv) if argv is not None else sys.argv[1:]
    # From the first byte: a signal is recorded, never the interpreter's default (a run
    # arms it where an interrupt is handled: run/session.py); the passwords of the URL
    # options and of $ACEMQ_INTEROP_BROKER are known before anything can echo them; the
    # variable leaves this process's environment, so no process started from here has it.
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if argv is not None else {}
    signals.install()
    if argv is not None:
        signals.clear()  # an earlier call's interrupt is not this one's
    redact.remember_arguments(given)
    taken = redact.take_broker_env()
    try:
        return _main(given)
    finally:
        if argv is not None:  # a caller in Python (a test): its own handlers and environment back
            signals.uninstall(previous)
            os.environ.update(taken)
        else:  # the program itself: see signals.ignore_from_now
            signals.ignore_from_now()


def _main(given: list[str]) -> int:
    args = build_parser().parse_args(given)
    args.argv = given
    if getattr(args, "quiet", False):
        VERBOSITY["level"] = 0
    elif getattr(args, "verbose", False) and args.command == "run":
        VERBOSITY["level"] = 2
    try:
        try:
            if args.command != "run":
                # Ctrl-C or SIGTERM ends these at once; a run decides where (run/session.py).
                signals.arm()
            return args.func(args)
        finally:
            signals.disarm()
    except UsageError as exc:
        print(f"acemq-interop: {said(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokerError as exc:
        print(f"acemq-interop: broker: {said(str(exc))}", file=sys.stderr)
        return EXIT_INFRA
    except BrokenPipeError:
        # `acemq-interop list | head`: the reader went away; nothing more to say to it.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except KeyboardInterrupt:
        print("acemq-interop: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
