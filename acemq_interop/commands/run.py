"""`acemq-interop run` (and its `--repeat`), and `flakes`: the flags made a `RunRequest`, the
session run (run/session.py, the same the project's tests call), the result written and shown.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..broker.endpoint import check_management_url, parse_broker_url
from ..broker.lifecycle import broker_sources
from ..core.errors import UsageError
from ..core.paths import FOREIGN_DIR
from ..core.redact import broker_env
from ..peers.manifests import discover, parse_peer_list
from ..results.outdir import OutFolder, write_whole
from ..spec import known_failures
from ..spec.catalogue import catalogue
from ..spec import scenarios as scenario_mod
from .common import EXIT_FAILED, EXIT_INFRA, EXIT_INTERRUPTED, EXIT_OK, EXIT_SOAK, OUTPUT_FILES, log, peer_dirs

if TYPE_CHECKING:
    from ..run.request import RunRequest


MAX_OP_TIMEOUT_S = 3600


def _specs(args: argparse.Namespace, manifests: dict) -> list:
    if args.peers is not None:
        return parse_peer_list(args.peers, manifests)
    return parse_peer_list(",".join(sorted(manifests)), manifests)



def rerun_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, ...]:
    """The flags that shaped the run, so a rerun line behaves as the run that failed: every
    option of the parser marked `rerun` (see commands/cli.py) whose value is not its default,
    as its first option string spells it."""
    flags: list[str] = []
    for action in parser._actions:
        if not getattr(action, "rerun", False):
            continue
        value = getattr(args, action.dest, None)
        if value is None or value == action.default or value is False:
            continue
        option = action.option_strings[0]
        if value is True:
            flags.append(option)
        elif isinstance(value, list):
            for item in value:
                flags += [option, str(item)]
        else:
            flags += [option, f"{value:g}" if isinstance(value, float) else str(value)]
    return tuple(flags)


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



def request_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> "RunRequest":
    """The parsed `run` flags as the run's request, every one checked: no broker is started yet."""
    from ..core.redact import argv as redacted
    from ..run.cpu_hog import MAX_HOGS
    from ..run.request import RunRequest
    from ..run.selection import check_specs
    from ..run.sharding import Shard, read_durations

    if args.concurrency < 1:
        raise UsageError(f"--concurrency {args.concurrency}: must be at least 1")
    if not 0 < args.op_timeout <= MAX_OP_TIMEOUT_S:  # nan and inf too
        raise UsageError(f"--op-timeout {args.op_timeout:g}: must be more than 0 seconds and at most {MAX_OP_TIMEOUT_S} "
                         "(a number of seconds)")
    check_management_url(args.management_url)
    if not 0 <= args.cpu_hog <= MAX_HOGS:
        raise UsageError(f"--cpu-hog {args.cpu_hog}: give 0 to {MAX_HOGS} busy processes")
    manifests = discover(extra=[*([FOREIGN_DIR] if args.foreign else []), *peer_dirs(args)])
    specs = _specs(args, manifests)
    check_specs(specs, frozenset(name for name, m in manifests.items() if m.image))
    interop = frozenset(s.name for s in specs if manifests[s.name].is_foreign) if args.foreign else frozenset()
    if args.foreign and (not interop or interop == {s.name for s in specs}):
        raise UsageError("--foreign pairs a stack of foreign/ with acemq bindings: name at least one of each with --peers "
                         f"(foreign: {', '.join(sorted(n for n, m in manifests.items() if m.is_foreign)) or 'none found'})")
    extra = [Path(d) for d in args.scenario_dir or []]
    chosen = args.scenarios.split(",") if args.scenarios is not None else None
    if chosen is None and args.foreign:
        chosen = sorted({case.scenario for case in catalogue().foreign_cases.values()})
    scenarios = scenario_mod.select(scenario_mod.load_all(extra=extra), chosen)
    if args.scenarios is None:  # the cluster scenarios with --cluster, every other one without
        fitting = scenario_mod.by_default(scenarios, args.cluster)
        if args.cluster and not fitting:
            needed = sorted({sc.nodes for sc in scenarios if sc.nodes > 1})
            raise UsageError(f"--cluster {args.cluster}: no cluster scenario runs on {args.cluster} nodes (they need "
                             f"{' or '.join(map(str, needed)) or 'more'}): give --cluster {needed[0] if needed else 3}, "
                             "or name scenarios with --scenarios")
        scenarios = fitting
    known = known_failures.load([known_failures.DEFAULT_DIR, *[Path(p) for p in args.known_failures or []]]) if not args.no_known_failures else []
    broker = args.broker or broker_env() or None
    ca_file = _tls_choice(args, broker)
    if args.ca_cert:
        args.ca_cert = ca_file  # a rerun line names the same file from anywhere
    if broker:
        parse_broker_url(broker, args.management_url, ca_file)  # a malformed URL is refused here, before anything starts
    baseline = None
    if args.baseline:
        from ..results.files import read_results

        baseline = read_results(Path(args.baseline))  # now: it may be the results.json this run replaces
    return RunRequest(
        manifests=manifests, specs=tuple(specs), scenarios=tuple(scenarios), known=tuple(known),
        brokers=tuple(broker_sources(broker, args.management_url, args.broker_image, ca_file, args.cluster)),
        concurrency=args.concurrency, build=not args.no_build, only_cells=frozenset(args.cell) if args.cell else None,
        diagonal=args.diagonal, op_bound_s=args.op_timeout, in_docker=args.in_docker, out_dir=Path(args.out),
        shard=Shard.parse(args.shard) if args.shard else None,
        durations=read_durations(Path(args.durations)) if args.durations else {},
        command=("acemq-interop", *redacted(getattr(args, "argv", None) or sys.argv[1:])),
        rerun_flags=rerun_flags(parser, args), transcripts=args.transcripts, tls=args.tls, cpu_hog=args.cpu_hog,
        baseline=baseline, profile=args.profile, interop=interop, log=log)


def write_outputs(report, out: Path) -> list[Path]:
    """results.json, junit.xml, report.html and summary.md; summary.md also to $GITHUB_STEP_SUMMARY."""
    from ..reports.html import write_html
    from ..reports.markdown import render_markdown
    from ..reports.junit import write_junit
    from ..results.files import write_json

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in OUTPUT_FILES]
    # Each file whole or not at all: written beside its name and renamed over it.
    write_whole(paths[0], lambda p: write_json(report, p))
    write_whole(paths[1], lambda p: write_junit(report, p))
    write_whole(paths[2], lambda p: write_html(report, p))
    markdown = render_markdown(report)
    write_whole(paths[3], lambda p: p.write_text(markdown, encoding="utf-8"))
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(markdown + "\n")
    return paths


MAX_REPEAT = 100


def cmd_flakes(args: argparse.Namespace) -> int:
    from ..reports.flakes import repeat_text, write_repeat
    from ..results.repeat import RepeatReport, load_runs

    report = RepeatReport.of(load_runs([Path(p) for p in args.results]))
    paths = write_repeat(report, Path(args.out))
    print(repeat_text(report))
    print(f"Wrote {', '.join(str(p) for p in paths)}")
    return EXIT_FAILED if report.varying else EXIT_OK


def _soak_figures(results: Path) -> dict[str, Any]:
    """One run's soak figures: the harness's own now (run/soak.py), the broker's as the run
    left it (its results.json `broker_left`)."""
    from ..run.soak import harness_figures

    figures = harness_figures()
    try:
        left = json.loads(results.read_text(encoding="utf-8")).get("broker_left") or {}
    except (OSError, ValueError):
        left = {}
    return {**figures, "connections": left.get("connections"), "vhosts": left.get("vhosts"),
            "connections_left": left.get("connections_left"), "stale_connection_rows": left.get("stale_connection_rows")}


def cmd_repeat(args: argparse.Namespace) -> int:
    """`run --repeat N`: N runs of the same selection, each a whole run of its own (its broker
    node, vhost and peer processes) in OUT/run-K/, then the repeat report in OUT/. A run cut
    short (the broker lost, an interrupt) ends the repetition: its cells are not a verdict.
    After each run the soak's figures are taken (results/soak.py); a figure that grows after
    the warm-up runs fails the repeat (EXIT_SOAK)."""
    import copy

    from ..reports.flakes import repeat_text, soak_text, write_repeat
    from ..results.repeat import RepeatReport, load_runs
    from ..results.soak import FIGURES, SoakReport

    if not 2 <= args.repeat <= MAX_REPEAT:
        raise UsageError(f"--repeat {args.repeat}: give 2 to {MAX_REPEAT} runs (1, the default, is one run)")
    if args.baseline or args.shard:
        raise UsageError("--repeat runs the whole selection each time: give --baseline or --shard to a single run")
    out = Path(args.out)
    folder = OutFolder.claim(out)  # this process's until it ends: no other run clears or writes it
    folder.clear((*OUTPUT_FILES, "repeat.json", "soak.json"),
                 folders=[old.name for old in out.glob("run-*") if old.is_dir() and re.fullmatch(r"run-\d+", old.name)])
    codes: list[int] = []
    figures: list[dict[str, Any]] = []
    for k in range(1, args.repeat + 1):
        log(f"repeat {k}/{args.repeat}: out {out / f'run-{k}'}")
        one = copy.copy(args)
        one.repeat, one.out = 1, str(out / f"run-{k}")
        one.no_build = args.no_build or k > 1  # built once, before the first run
        codes.append(cmd_run(one))
        figures.append(_soak_figures(out / f"run-{k}" / "results.json"))
        log(f"repeat {k}/{args.repeat}: soak " + ", ".join(f"{FIGURES[n]} {figures[-1].get(n)}" for n in FIGURES))
        if codes[-1] in (EXIT_INFRA, EXIT_INTERRUPTED):
            break
    soak = SoakReport.of(figures)
    finished = [out / f"run-{k}" / "results.json" for k in range(1, len(codes) + 1)]
    finished = [p for p in finished if p.exists()]
    if len(finished) >= 2:
        report = RepeatReport.of(load_runs(finished))
        paths = write_repeat(report, out, soak)
        # results.json of OUT: the last run's, carrying the repeat report.
        last = json.loads(finished[-1].read_text(encoding="utf-8"))
        last["repeat"] = report.record()
        write_whole(out / "results.json", lambda p: p.write_text(json.dumps(last, indent=2) + "\n", encoding="utf-8"))
        print(repeat_text(report))
        print(soak_text(soak))
        print(f"Wrote {', '.join(str(p) for p in [out / 'results.json', *paths])}")
        varied = bool(report.varying)
    else:
        varied = False
    if codes[-1] in (EXIT_INFRA, EXIT_INTERRUPTED):
        print(f"acemq-interop: --repeat stopped after run {len(codes)} of {args.repeat} (exit {codes[-1]})", file=sys.stderr)
        return codes[-1]
    if soak.grew:
        # Its own class: a harness that leaks makes every later run's verdicts suspect, and
        # the cause is the harness's (or the broker's), not a binding's.
        return EXIT_SOAK
    return EXIT_FAILED if varied or any(c != EXIT_OK for c in codes) else EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    if getattr(args, "repeat", 1) != 1:
        return cmd_repeat(args)
    # --out is this run's before anything else: a second run refuses it (results/outdir.py).
    folder = OutFolder.claim(Path(args.out))
    try:
        return _run(args, folder)
    finally:
        folder.release()


def _run(args: argparse.Namespace, folder: OutFolder) -> int:
    from ..reports.console import print_report
    from ..run.session import run_session

    # A signal from here to the session's start is recorded (core/signals.py) and the session
    # says so: the files below are then this run's, saying it was interrupted.
    request = request_from_args(args, args.parser)
    out = Path(args.out)
    # This run's files only: an earlier run's results never stay in out/ as if they were
    # this one's, whatever happens from here (no broker, a lost one, an interrupt, a crash).
    folder.clear((*OUTPUT_FILES, "profile.json"))
    outcome = run_session(request)
    paths = write_outputs(outcome.report, out)
    if outcome.failure is not None:
        if isinstance(outcome.failure, KeyboardInterrupt):
            print(f"acemq-interop: interrupted before any cell ran; wrote {out / 'results.json'}; "
                  f"peer logs in {out / 'logs'}", file=sys.stderr)
        raise outcome.failure  # one line on the console (main prints it); the files say the same per cell
    print_report(outcome.report)
    if outcome.profile is not None:
        from ..run import profile

        paths.append(profile.write(outcome.profile, out))
        print(profile.text(outcome.profile))
    print(f"Wrote {', '.join(str(p) for p in paths)}; peer logs in {out / 'logs'}")
    if outcome.interrupted:
        print(f"acemq-interop: interrupted: the cells that ran are in {out / 'results.json'}; the rest are ERROR (not run)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if outcome.aborted:
        print(f"acemq-interop: the run was cut short: {outcome.aborted}. The cells that ran keep their results; the rest are ERROR "
              "(not run). Check the broker, then run again.", file=sys.stderr)
        return EXIT_INFRA
    code = EXIT_OK if outcome.report.ok else EXIT_FAILED
    if outcome.comparison is not None:
        from ..results.compare import as_text

        print(as_text(outcome.comparison, args.baseline, "this run"))
        if outcome.comparison.regressed:
            code = EXIT_FAILED
    return code
