"""The `acemq-interop` command: run, list, doctor, bench, compare, merge.

Exit codes, by class: 0 every cell passed (or was a known failure); 1 a FAIL, ERROR or
XPASS (or, for compare and --baseline, a regression); 2 usage or bad input (a typo, a bad
scenario file), found before any broker starts; 3 infrastructure: the broker unreachable,
refusing, or lost.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from ..spec import known_failures
from ..spec import scenarios as scenario_mod
from ..core import signals
from ..broker.endpoint import parse_broker_url
from ..broker.node import no_broker_message
from ..core.redact import BROKER_ENV
from ..run.runner import DEFAULT_CONCURRENCY
from ..core.errors import BrokerError, UsageError
from ..peers.manifests import discover, parse_peer_list

if TYPE_CHECKING:
    from ..run.runner import RunOptions

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3
EXIT_INTERRUPTED = 130
OUTPUT_FILES = ("results.json", "junit.xml", "report.html", "summary.md")
EXIT_CODES_HELP = (
    "exit codes: 0 all cells pass; 1 a FAIL, ERROR or XPASS (compare, --baseline: a regression; --repeat, flakes: a verdict that varied); "
    "2 usage or bad input (before any broker starts); 3 infrastructure (broker unreachable or lost)"
)
VERBOSITY = {"level": 1}  # 0 quiet, 1 progress, 2 verbose


def _log(message: str) -> None:
    from ..core.redact import text

    if VERBOSITY["level"] == 0 and not message.startswith(("peer ", "acemq-interop")):
        return
    print(text(message), file=sys.stderr, flush=True)


def _peer_dirs(args: argparse.Namespace) -> list[Path]:
    return [Path(p) for p in getattr(args, "peer_dir", None) or []]


def _specs(args: argparse.Namespace, manifests: dict) -> list:
    if args.peers is not None:
        return parse_peer_list(args.peers, manifests)
    return parse_peer_list(",".join(sorted(manifests)), manifests)


def _rerun_flags(args: argparse.Namespace) -> list[str]:
    """Flags that shaped the run, so a rerun line behaves as the run that failed."""
    flags: list[str] = []
    for path in _peer_dirs(args):
        flags += ["--peer-dir", str(path)]
    if args.management_url:
        flags += ["--management-url", args.management_url]
    if args.in_docker:
        flags.append("--in-docker")
    for extra in args.known_failures or []:
        flags += ["--known-failures", extra]
    if args.no_known_failures:
        flags.append("--no-known-failures")
    if args.op_timeout != 20.0:
        flags += ["--op-timeout", f"{args.op_timeout:g}"]
    if getattr(args, "tls", False):
        flags.append("--tls")
    if getattr(args, "ca_cert", None):
        flags += ["--ca-cert", str(Path(args.ca_cert).expanduser().resolve())]
    if getattr(args, "cpu_hog", 0):
        flags += ["--cpu-hog", str(args.cpu_hog)]  # a verdict seen under load is reproduced under load
    return flags


def _tls_choice(args: argparse.Namespace, broker: str | None) -> str | None:
    """--tls and --ca-cert checked against the broker choice; the CA file of an amqps broker."""
    from ..amqp.tls import check_ca_file

    tls_url = bool(broker) and broker.lower().startswith("amqps:")
    if args.ca_cert and not tls_url:
        raise UsageError("--ca-cert is the CA of an existing TLS broker: give it with --broker amqps://USER:PASS@HOST[:PORT]/ "
                         "(--tls alone makes the run's own CA)")
    if args.tls and broker and not tls_url:
        raise UsageError("--tls gives the harness's own broker (private node or --broker-image) a TLS listener; "
                         "for an existing broker give --broker amqps://USER:PASS@HOST[:PORT]/ --ca-cert FILE")
    return str(check_ca_file(args.ca_cert)) if args.ca_cert else None


def run_options(args: argparse.Namespace, argv: list[str] | None = None) -> "RunOptions":
    """The parsed `run` flags as the run's options, every one checked: no broker is started yet."""
    from ..core.redact import argv as redacted
    from ..run.runner import RunOptions
    from ..run.selection import check_specs
    from ..run.sharding import Shard, read_durations

    if args.concurrency < 1:
        raise UsageError(f"--concurrency {args.concurrency}: must be at least 1")
    if args.op_timeout <= 0:
        raise UsageError(f"--op-timeout {args.op_timeout:g}: must be more than 0 seconds")
    manifests = discover(extra=_peer_dirs(args))
    specs = _specs(args, manifests)
    check_specs(specs, frozenset(name for name, m in manifests.items() if m.image))
    scenarios = scenario_mod.select(scenario_mod.load_all(), args.scenarios.split(",") if args.scenarios is not None else None)
    known = known_failures.load([known_failures.DEFAULT_DIR, *[Path(p) for p in args.known_failures or []]]) if not args.no_known_failures else []
    broker = args.broker or os.environ.get(BROKER_ENV) or None
    ca_file = _tls_choice(args, broker)
    endpoint = parse_broker_url(broker, args.management_url, ca_file) if broker else None
    return RunOptions(
        manifests=manifests, specs=specs, scenarios=scenarios, known=known, broker_url=broker, endpoint=endpoint,
        concurrency=args.concurrency, build=not args.no_build, log=_log, only_cells=args.cell or None,
        diagonal=args.diagonal, op_bound_s=args.op_timeout, in_docker=args.in_docker, out_dir=Path(args.out),
        shard=Shard.parse(args.shard) if args.shard else None,
        durations=read_durations(Path(args.durations)) if args.durations else {},
        command=["acemq-interop", *redacted(argv if argv is not None else sys.argv[1:])],
        rerun_flags=_rerun_flags(args),
        transcripts=getattr(args, "transcripts", "failed"),
    )


def write_outputs(report, out: Path) -> list[Path]:
    """results.json, junit.xml, report.html and summary.md; summary.md also to $GITHUB_STEP_SUMMARY."""
    from ..reports.html import write_html
    from ..reports.markdown import render_markdown
    from ..reports.junit import write_junit
    from ..results.files import write_json

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in OUTPUT_FILES]
    write_json(report, paths[0])
    write_junit(report, paths[1])
    write_html(report, paths[2])
    markdown = render_markdown(report)
    paths[3].write_text(markdown, encoding="utf-8")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(markdown + "\n")
    return paths


def _write_not_run(options: "RunOptions", source, why: str, out: Path) -> None:
    """Results files for a run whose cells never started: each planned cell ERROR with why."""
    from ..results.model import BrokerInfo
    from ..core.redact import text
    from ..run.runner import Runner

    write_outputs(Runner(options).not_run(BrokerInfo(source.describe()), text(why)), out)


MAX_REPEAT = 100


def cmd_flakes(args: argparse.Namespace) -> int:
    from ..reports.flakes import repeat_text, write_repeat
    from ..results.repeat import RepeatReport, load_runs

    report = RepeatReport.of(load_runs([Path(p) for p in args.results]))
    paths = write_repeat(report, Path(args.out))
    print(repeat_text(report))
    print(f"Wrote {', '.join(str(p) for p in paths)}")
    return EXIT_FAILED if report.varying else EXIT_OK


def cmd_repeat(args: argparse.Namespace) -> int:
    """`run --repeat N`: N runs of the same selection, each a whole run of its own (its broker
    node, vhost and peer processes) in OUT/run-K/, then the repeat report in OUT/. A run cut
    short (the broker lost, an interrupt) ends the repetition: its cells are not a verdict."""
    import copy

    from ..reports.flakes import repeat_text, write_repeat
    from ..results.repeat import RepeatReport, load_runs

    if not 2 <= args.repeat <= MAX_REPEAT:
        raise UsageError(f"--repeat {args.repeat}: give 2 to {MAX_REPEAT} runs (1, the default, is one run)")
    if args.baseline or args.shard:
        raise UsageError("--repeat runs the whole selection each time: give --baseline or --shard to a single run")
    out = Path(args.out)
    for name in (*OUTPUT_FILES, "repeat.json"):
        (out / name).unlink(missing_ok=True)
    for old in out.glob("run-*"):
        if old.is_dir() and re.fullmatch(r"run-\d+", old.name):
            shutil.rmtree(old, ignore_errors=True)
    codes: list[int] = []
    for k in range(1, args.repeat + 1):
        _log(f"repeat {k}/{args.repeat}: out {out / f'run-{k}'}")
        one = copy.copy(args)
        one.repeat, one.out = 1, str(out / f"run-{k}")
        one.no_build = args.no_build or k > 1  # built once, before the first run
        codes.append(cmd_run(one))
        if codes[-1] in (EXIT_INFRA, EXIT_INTERRUPTED):
            break
    finished = [out / f"run-{k}" / "results.json" for k in range(1, len(codes) + 1)]
    finished = [p for p in finished if p.exists()]
    if len(finished) >= 2:
        report = RepeatReport.of(load_runs(finished))
        paths = write_repeat(report, out)
        # results.json of OUT: the last run's, carrying the repeat report.
        last = json.loads(finished[-1].read_text(encoding="utf-8"))
        last["repeat"] = report.record()
        (out / "results.json").write_text(json.dumps(last, indent=2) + "\n", encoding="utf-8")
        print(repeat_text(report))
        print(f"Wrote {', '.join(str(p) for p in [out / 'results.json', *paths])}")
        varied = bool(report.varying)
    else:
        varied = False
    if codes[-1] in (EXIT_INFRA, EXIT_INTERRUPTED):
        print(f"acemq-interop: --repeat stopped after run {len(codes)} of {args.repeat} (exit {codes[-1]})", file=sys.stderr)
        return codes[-1]
    return EXIT_FAILED if varied or any(c != EXIT_OK for c in codes) else EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    if getattr(args, "repeat", 1) != 1:
        return cmd_repeat(args)

    from ..run import cells as cellmod
    from ..broker.lifecycle import Broker, broker_sources
    from ..reports.console import print_report
    from ..core.docker_engine import new_run_id, remove_run
    from ..results.model import BrokerInfo, combine_runs
    from ..run.runner import RunInterrupted, Runner
    from ..run.selection import check_cells

    from ..run.cpu_hog import MAX_HOGS

    if not 0 <= getattr(args, "cpu_hog", 0) <= MAX_HOGS:
        raise UsageError(f"--cpu-hog {args.cpu_hog}: give 0 to {MAX_HOGS} busy processes")
    options = run_options(args, getattr(args, "argv", None))
    check_cells(cellmod.plan(options.scenarios, options.specs, options.diagonal), options.only_cells)
    baseline = None
    if args.baseline:
        from ..results.compare import read_results

        baseline = read_results(Path(args.baseline))
    sources = broker_sources(options.broker_url, args.management_url, args.broker_image,
                             options.endpoint.ca_file if options.endpoint else None)
    out = Path(args.out)
    # This run's files only: an earlier run's results never stay in out/ as if they were
    # this one's, whatever happens from here (no broker, a lost one, an interrupt, a crash).
    # (--baseline, possibly out/results.json, was read above.)
    shutil.rmtree(out / "logs", ignore_errors=True)
    for name in OUTPUT_FILES:
        (out / name).unlink(missing_ok=True)
    if any(s.kind == "node" for s in sources) and shutil.which("rabbitmq-server") is None and not Path("/usr/sbin/rabbitmq-server").exists():
        raise BrokerError(no_broker_message())
    run_id = new_run_id()
    uses_docker = options.in_docker or args.broker_image or any(m.image for m in options.manifests.values())
    reports = []
    builds = None
    if options.build and not options.in_docker:
        from ..peers.builds import Builds

        # The peers build while the broker starts: the two used to add up.
        selected = sorted({s.name for s in options.specs})
        builds = Builds([options.manifests[n] for n in selected if not options.manifests[n].image], _log)
        options = replace(options, builds=builds)
    aborted: str | None = None
    interrupted = False
    stack = ExitStack()  # the run's certificates (with --tls) outlive the brokers and containers that use them
    try:
        if args.cpu_hog:
            from ..run.cpu_hog import cpu_hogs

            stack.enter_context(cpu_hogs(args.cpu_hog, _log))
        certificates = None
        if args.tls and any(s.kind != "url" for s in sources):
            from ..amqp.tls import run_certificates

            # Made for this run, removed at its end (the ExitStack), whatever happens.
            certificates = stack.enter_context(run_certificates())
            _log(f"TLS: a CA and a server certificate for this run in {certificates.dir} (removed at the end)")
        # The broker axis: every cell on each broker, one broker after the other.
        for index, source in enumerate(sources):
            try:
                with Broker(source, _log, run_id, index, tls=certificates) as broker:
                    facts = broker.facts
                    assert broker.endpoint is not None
                    info = BrokerInfo(facts.label, facts.product, facts.version, facts.erlang_version, tls=broker.endpoint.tls)
                    flags = options.rerun_flags + (["--broker-image", source.image] if source.image else [])
                    logs = out / "logs" / (facts.label if len(sources) > 1 else "")
                    reports.append(Runner(replace(options, endpoint=broker.endpoint, run_id=run_id, broker=info,
                                                  rerun_flags=flags, log_dir=logs, broker_lost=broker.lost,
                                                  broker_control=broker.control())).run())
                if signals.pending():  # caught while the node stopped: the next broker does not start
                    interrupted = True
                    break
            except RunInterrupted as stopped:
                signals.absorb()  # a further signal must not lose what ran: it is written below
                reports.append(stopped.report)
                interrupted = True
                break
            except BrokerError as exc:
                if not reports:
                    # One line on the console (main prints it); the files say the same per cell.
                    _write_not_run(options, source, f"broker unusable: {exc}", out)
                    raise
                aborted = f"{source.describe()}: {exc}"  # an earlier broker's cells still count
                break
            except KeyboardInterrupt:
                if not reports:
                    signals.absorb()
                    _write_not_run(options, source, "interrupted (Ctrl-C or SIGTERM) before any cell ran", out)
                    print(f"acemq-interop: interrupted before any cell ran; wrote {out / 'results.json'}; "
                          f"peer logs in {out / 'logs'}", file=sys.stderr)
                    raise
                interrupted = True
                break
    finally:
        if builds is not None:
            builds.cancel()  # after an interrupt, no build outlives the run
        if uses_docker:
            left = remove_run(run_id)
            if left:
                _log(f"containers of run {run_id} could not be removed: {', '.join(left)} (acemq-interop doctor --clean)")
        stack.close()
    report = combine_runs(reports)
    aborted = report.meta.get("aborted") or aborted
    if aborted:
        report.meta["aborted"] = aborted
    paths = write_outputs(report, out)
    print_report(report)
    print(f"Wrote {', '.join(str(p) for p in paths)}; peer logs in {out / 'logs'}")
    if interrupted:
        print(f"acemq-interop: interrupted: the cells that ran are in {out / 'results.json'}; the rest are ERROR (not run)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if aborted:
        print(f"acemq-interop: the run was cut short: {aborted}. The cells that ran keep their results; the rest are ERROR "
              "(not run). Check the broker, then run again.", file=sys.stderr)
        return EXIT_INFRA
    code = EXIT_OK if report.ok else EXIT_FAILED
    if baseline is not None:
        from ..results.compare import as_text, compare
        from ..results.files import results_data

        comparison = compare(baseline, results_data(report))
        print(as_text(comparison, args.baseline, "this run"))
        if comparison.regressed:
            code = EXIT_FAILED
    return code


def cmd_list(args: argparse.Namespace) -> int:
    if args.rules or args.json:
        return _list_rules(args.json)
    manifests = discover(extra=_peer_dirs(args))
    print("Peers (peers/*/peer.yaml):")
    for name, m in sorted(manifests.items()):
        print(f"  {name:<10} {m.language:<12} {m.description}")
    print("\nScenarios (scenarios/**/*.yaml):")
    for s in scenario_mod.load_all():
        roles = ", ".join(f"{r}={k}" for r, k in s.roles.items())
        print(f"  {s.id:<44} {','.join(s.rules):<16} {s.matrix:<11} {roles}")
        if args.verbose:
            print(f"      {s.title}\n      asserts {', '.join(s.clauses)}\n      {s.procedure}\n")
    return EXIT_OK


def _list_rules(as_json: bool) -> int:
    """Every clause: its text and the scenarios asserting it, or why none can (unobservable)."""
    from ..spec.catalogue import catalogue
    from ..spec.clause_table import as_text, clause_rows

    rows = clause_rows(catalogue(), scenario_mod.load_all())
    if as_json:
        print(json.dumps([r.as_json() for r in rows], indent=1, ensure_ascii=False))
    else:
        print(as_text(rows))
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    """Which peers can run here, and why not: commands, versions, client libraries."""
    from ..peers.doctor import check_broker, check_peer

    manifests = discover(extra=_peer_dirs(args))
    ok = True
    broker_line, broker_ok = check_broker()
    print(broker_line)
    for name, m in sorted(manifests.items()):
        lines, ready = check_peer(m)
        ok = ok and ready
        for line in lines:
            print(line)
    _doctor_leftovers(args)
    _doctor_containers(manifests, args.clean)
    return EXIT_OK if ok else EXIT_FAILED


def _doctor_leftovers(args: argparse.Namespace) -> None:
    """Private nodes and vhosts left by killed runs. --clean removes those whose owner is
    provably dead (ownership.py); the others are only reported."""
    from ..broker.leftovers import leftover_nodes, leftover_vhosts, sweep_nodes, sweep_vhosts
    from ..core.redact import url as redacted

    if args.clean:
        sweep_nodes(print)
    nodes = leftover_nodes()
    print(f"private nodes in {tempfile.gettempdir()}: " + ("none" if not nodes else f"{len(nodes)}"))
    for left in nodes:
        print(f"  {left.line()}" + ("  (doctor --clean removes it)" if left.state == "owner dead" else ""))
    broker = args.broker or os.environ.get(BROKER_ENV)
    if not broker:
        print(f"vhosts left on an existing broker: not looked at (give --broker or ${BROKER_ENV})")
        return
    try:
        endpoint = parse_broker_url(broker, args.management_url)
        management = endpoint.management()
        if args.clean:
            sweep_vhosts(management, print)
        vhosts = leftover_vhosts(management)
    except (BrokerError, UsageError) as exc:
        print(f"vhosts on {redacted(broker)}: could not look ({exc})")
        return
    print(f"acemq-interop vhosts on {endpoint.host}:{endpoint.port}: " + ("none" if not vhosts else f"{len(vhosts)}"))
    for left in vhosts:
        hint = ("  (doctor --clean removes it)" if left.state == "owner dead"
                else "  (not provably a dead run's: delete it yourself if it is)" if left.state.startswith("owner unknown") else "")
        print(f"  {left.line()}{hint}")


def _doctor_containers(manifests: dict, clean: bool) -> None:
    """The Docker side: the engine, each peer's image, and containers left by killed runs
    (by the run label only); --clean removes those."""
    from ..core import docker_engine

    problem = docker_engine.engine_problem()
    if problem:
        print(f"docker: {problem} (only --in-docker and --broker-image need it)")
        return
    print("docker: an engine answers; peer images for --in-docker:")
    for name, m in sorted(manifests.items()):
        image = m.docker.get("image")
        if image:
            built = docker_engine.image_exists(str(image))
            print(f"  {name:<10} {image}: {'built' if built else 'not built (docker compose build peer-' + name + ', or sh ci/images.sh ' + name + ')'}")
    left = docker_engine.containers()
    if not left:
        print(f"containers labelled {docker_engine.RUN_LABEL}: none")
        return
    print(f"containers labelled {docker_engine.RUN_LABEL} (left by runs that were killed, or by a run still going):")
    for c in left:
        print(f"  {c.name} ({c.role}, run {c.run}, {c.image}): {c.status}")
    if clean:
        remaining = docker_engine.remove([c.id for c in left])
        print(f"removed {len(left) - len(remaining)} container(s)" + (f"; could not remove {', '.join(remaining)}" if remaining else ""))
    else:
        print("  remove them with: acemq-interop doctor --clean")


def cmd_compare(args: argparse.Namespace) -> int:
    from ..results.compare import as_markdown, as_text, compare, read_results

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


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import BenchSettings, run_bench

    manifests = discover(extra=_peer_dirs(args))
    specs = parse_peer_list(args.peers, manifests) if args.peers else parse_peer_list(",".join(sorted(manifests)), manifests)
    endpoint = parse_broker_url(args.broker, args.management_url) if args.broker else None
    settings = BenchSettings(requests=args.requests, in_flight=args.in_flight, body_bytes=args.body_bytes,
                             warmup=args.warmup, pair_requests=args.pair_requests, seed_requests=args.seed_requests,
                             pairs=not args.no_pairs)
    run_bench(manifests, specs, endpoint, settings, Path(args.out), _log, Path(args.compare) if args.compare else None)
    return EXIT_OK


def cmd_publish(args: argparse.Namespace) -> int:
    """A static site from several runs' results.json (issue 13)."""
    from ..reports.publish import publish

    missing = [p for p in args.results if not Path(p).is_file()]
    if missing:
        raise UsageError(f"publish: no such results.json: {', '.join(missing)}")
    index = publish([Path(p) for p in args.results], Path(args.site), args.docs_url, _log)
    print(f"Wrote {index} ({len(args.results)} run(s))")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from ..core.suite_info import version

    parser = argparse.ArgumentParser(prog="acemq-interop", epilog=EXIT_CODES_HELP,
                                     description="Cross-language interop conformance for acemq request/reply and scatter-gather on RabbitMQ.")
    parser.add_argument("--version", action="version", version=f"acemq-interop {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run scenarios between peers and print the matrices", epilog=EXIT_CODES_HELP)
    run.add_argument("--peers", help="comma list of NAME[@PROFILE][+MUTANT] (default: every peer in peers/)")
    run.add_argument("--scenarios", help="comma list of scenario id globs (default: all)")
    run.add_argument("--cell", action="append", help="run only this cell id (repeatable; as printed in a rerun line)")
    run.add_argument("--broker", help=f"amqp://USER:PASS@HOST:PORT/ (or amqps://... with --ca-cert) of an existing RabbitMQ (default: ${BROKER_ENV}, else a private node)")
    run.add_argument("--management-url", help="management API of --broker (default http://HOST:15672)")
    run.add_argument("--tls", action="store_true",
                     help="over TLS: the private node (or each --broker-image) gets a TLS listener on certificates made for "
                          "the run, and every peer, the probe and the transcript tracer connect with amqps, verifying it; "
                          "a peer without the tls capability is SKIP")
    run.add_argument("--ca-cert", metavar="FILE",
                     help="with --broker amqps://USER:PASS@HOST[:PORT]/ (port 5671 by default): the PEM file of the CA "
                          "that signed the broker's certificate; every client verifies the broker against it")
    run.add_argument("--broker-image", action="append", metavar="IMAGE",
                     help="run on a RabbitMQ container from IMAGE (built from ci/rabbitmq/Dockerfile), removed at the end; "
                          "repeat for a broker axis: every cell on each broker")
    run.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, help=f"cells run at once, longest first (default {DEFAULT_CONCURRENCY}: most cells wait on timers, so 24 at once keep the 2-core machine this was measured on busy without starving it)")
    run.add_argument("--out", default="out", help="folder for results.json, junit.xml, report.html and summary.md (default ./out)")
    run.add_argument("--known-failures", action="append", help="an extra known-failures file (known-failures/ is always read)")
    run.add_argument("--no-known-failures", action="store_true", help="ignore the known-failures lists (every failure is a FAIL)")
    run.add_argument("--diagonal", action="store_true", help="only cells where one peer spec plays every role (itself and the probe): for certifying a binding and for mutant runs")
    run.add_argument("--op-timeout", type=float, default=20.0, help="seconds a peer has to answer a command that does not wait on the broker (default 20)")
    run.add_argument("--in-docker", action="store_true", help="run each peer from its image (docker run -i --rm --network host IMAGE; build them with docker compose build); a peer whose image is missing is SKIP")
    run.add_argument("--no-build", action="store_true", help="do not run the peers' build commands")
    run.add_argument("--peer-dir", action="append", help="a peer folder (with peer.yaml) or a folder of them, kept outside this suite (repeatable; also $ACEMQ_INTEROP_PEER_PATH)")
    run.add_argument("--shard", help="K/N: run only the K-th of N deterministic slices of the cells (join them with `merge`)")
    run.add_argument("--durations", help="an earlier results.json: balance --shard and order cells by its durations")
    run.add_argument("--baseline", help="an earlier results.json: print what changed; a regression exits 1")
    run.add_argument("--transcripts", choices=("failed", "all", "none"), default="failed",
                     help="keep the broker's transcript (firehose) of: non-PASS cells (default), every cell, or none")
    run.add_argument("--repeat", type=int, default=1, metavar="N",
                     help="run the same selection N times (2 to 100), each in OUT/run-K/, then report per cell its "
                          "verdicts across the runs, the cells whose verdict varied and a flake rate per peer and scenario "
                          "(OUT/repeat.json, OUT/summary.md, OUT/report.html); a varying cell exits 1")
    run.add_argument("--cpu-hog", type=int, default=0, metavar="N",
                     help="stress: N busy processes beside the run (stopped at its end), so a verdict that needs an idle "
                          "machine shows here first; with a --concurrency above the default and --repeat, the suite's own stress mode")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the result")
    run.add_argument("-v", "--verbose", action="store_true", help="more detail in progress lines")
    run.set_defaults(func=cmd_run)
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
    lst.set_defaults(func=cmd_list)
    bench = sub.add_parser("bench", help="each binding's request/reply rate measured inside its peer, against its raw client; per pair")
    bench.add_argument("--peers", help="comma list of peer names (default: every peer)")
    bench.add_argument("--peer-dir", action="append", help="a peer folder kept outside this suite (repeatable)")
    bench.add_argument("--requests", type=int, default=2000, help="measured requests per peer, binding and raw (default 2000)")
    bench.add_argument("--in-flight", type=int, default=64, help="requests outstanding at once (default 64)")
    bench.add_argument("--body-bytes", type=int, default=256, help="request body size (default 256)")
    bench.add_argument("--warmup", type=int, default=200, help="unmeasured requests first (default 200)")
    bench.add_argument("--pair-requests", type=int, default=1000, help="requests per requester x responder pair (default 1000)")
    bench.add_argument("--seed-requests", type=int, default=300, help="requests with a reply queue per request (default 300)")
    bench.add_argument("--no-pairs", action="store_true", help="per peer only, no requester x responder pairs")
    bench.add_argument("--out", default="out", help="folder for bench.json (default ./out)")
    bench.add_argument("--compare", help="an earlier bench.json: print the change per figure")
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


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    from ..core.redact import text

    args = build_parser().parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]
    if getattr(args, "quiet", False):
        VERBOSITY["level"] = 0
    elif getattr(args, "verbose", False) and args.command == "run":
        VERBOSITY["level"] = 2
    # A CI job's timeout sends SIGTERM: unwind like Ctrl-C, so the private broker node,
    # the run's vhost and the peer processes are still cleaned up.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        try:
            return args.func(args)
        finally:
            if argv is None:  # the program itself, not a caller in Python: see signals.ignore_from_now
                signals.ignore_from_now()
    except UsageError as exc:
        print(f"acemq-interop: {text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokerError as exc:
        print(f"acemq-interop: broker: {text(str(exc))}", file=sys.stderr)
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
