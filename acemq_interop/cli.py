"""The `acemq-interop` command: run, list, doctor."""
from __future__ import annotations

import argparse
import shutil
import signal
import sys
from pathlib import Path

from . import known_failures, scenarios as scenario_mod
from .broker import no_broker_message, parse_broker_url
from .errors import BrokerError, UsageError
from .manifests import discover, parse_peer_list

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    from .runner import Runner

    manifests = discover()
    specs = parse_peer_list(args.peers, manifests) if args.peers else parse_peer_list(",".join(sorted(manifests)), manifests)
    scenarios = scenario_mod.select(scenario_mod.load_all(), args.scenarios.split(",") if args.scenarios else None)
    known = known_failures.load([known_failures.DEFAULT_DIR, *[Path(p) for p in args.known_failures or []]]) if not args.no_known_failures else []
    # --- containers (issue 10): the broker axis and the run id; the lead reconciles this with the new result model.
    from .broker import Broker, broker_sources
    from .broker_axis import BrokerRun, print_outputs, write_outputs
    from .docker_engine import new_run_id, remove_run

    sources = broker_sources(args.broker, args.management_url, args.broker_image)
    if any(s.kind == "node" for s in sources) and shutil.which("rabbitmq-server") is None and not Path("/usr/sbin/rabbitmq-server").exists():
        raise BrokerError(no_broker_message())
    run_id = new_run_id()
    uses_docker = args.in_docker or any(s.kind == "image" for s in sources)
    runs: list[BrokerRun] = []
    try:
        for index, source in enumerate(sources):
            with Broker(source, _log, run_id, index) as broker:
                runner = Runner(manifests, specs, scenarios, known, None, broker.endpoint, args.concurrency, not args.no_build, _log,
                                only_cells=args.cell or None, diagonal=args.diagonal, op_bound_s=args.op_timeout,
                                in_docker=args.in_docker, run_id=run_id)
                report = runner.run()
            report.broker = f"{broker.facts.label} ({broker.facts.source})"
            extra = source.rerun_args() + (" --in-docker" if args.in_docker else "")
            for result in report.results:
                result.rerun += extra
            runs.append(BrokerRun(broker.facts, report))
            if args.cell and not report.results:
                raise UsageError(f"no planned cell has the id {args.cell!r}; check --peers (the cell's peers must be selected)")
    finally:
        if uses_docker:
            left = remove_run(run_id)
            if left:
                _log(f"containers of run {run_id} could not be removed: {', '.join(left)} (acemq-interop doctor --clean)")
    out = Path(args.out)
    written = write_outputs(runs, out)
    print_outputs(runs)
    print(f"Wrote {', '.join(str(p) for p in written)}; peer logs in {', '.join(sorted({str(r.report.log_dir) for r in runs}))}")
    return EXIT_OK if all(r.report.ok for r in runs) else EXIT_FAILED
    # --- end containers


def cmd_list(args: argparse.Namespace) -> int:
    manifests = discover()
    print("Peers (peers/*/peer.yaml):")
    for name, m in sorted(manifests.items()):
        print(f"  {name:<10} {m.language:<12} {m.description}")
    print("\nScenarios (scenarios/**/*.yaml):")
    for s in scenario_mod.load_all():
        roles = ", ".join(f"{r}={k}" for r, k in s.roles.items())
        print(f"  {s.id:<44} {','.join(s.rules):<16} {s.matrix:<11} {roles}")
        if args.verbose:
            print(f"      {s.title}\n      {s.procedure}\n")
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    """Which peers can run here, and why not."""
    manifests = discover()
    ok = True
    server = shutil.which("rabbitmq-server") or (Path("/usr/sbin/rabbitmq-server").exists() and "/usr/sbin/rabbitmq-server")
    print(f"broker: {'rabbitmq-server found at ' + str(server) + ' (the default private node works)' if server else 'no rabbitmq-server: use --broker'}")
    for name, m in sorted(manifests.items()):
        missing = m.missing_tools()
        if missing:
            ok = False
            print(f"  {name:<10} cannot run: {', '.join(missing)} not on PATH (see {m.folder.relative_to(m.folder.parent.parent)}/README.md)")
        else:
            print(f"  {name:<10} ready to build and run ({m.language})")
    _doctor_containers(manifests, args.clean)  # containers (issue 10)
    return EXIT_OK if ok else EXIT_FAILED


def _doctor_containers(manifests: dict, clean: bool) -> None:
    """The Docker side: the engine, each peer's image, and containers left by killed runs
    (by the run label only); --clean removes those."""
    from . import docker_engine

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


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import BenchSettings, run_bench

    manifests = discover()
    specs = parse_peer_list(args.peers, manifests) if args.peers else parse_peer_list(",".join(sorted(manifests)), manifests)
    endpoint = parse_broker_url(args.broker, args.management_url) if args.broker else None
    settings = BenchSettings(requests=args.requests, in_flight=args.in_flight, body_bytes=args.body_bytes,
                             warmup=args.warmup, pair_requests=args.pair_requests, seed_requests=args.seed_requests,
                             pairs=not args.no_pairs)
    run_bench(manifests, specs, endpoint, settings, Path(args.out), _log, Path(args.compare) if args.compare else None)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acemq-interop", description="Cross-language interop conformance for acemq request/reply and scatter-gather on RabbitMQ.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run scenarios between peers and print the matrices")
    run.add_argument("--peers", help="comma list of NAME[@PROFILE][+MUTANT] (default: every peer in peers/)")
    run.add_argument("--scenarios", help="comma list of scenario id globs (default: all)")
    run.add_argument("--cell", action="append", help="run only this cell id (repeatable; as printed in a rerun line)")
    run.add_argument("--broker", help="amqp://USER:PASS@HOST:PORT/ of an existing RabbitMQ (default: start a private node)")
    run.add_argument("--management-url", help="management API of --broker (default http://HOST:15672)")
    run.add_argument("--broker-image", action="append", metavar="IMAGE",
                     help="run on a RabbitMQ container from IMAGE (built from ci/rabbitmq/Dockerfile), removed at the end; "
                          "repeat for a broker axis: every cell on each broker")
    run.add_argument("--concurrency", type=int, default=4, help="cells run at once (default 4)")
    run.add_argument("--out", default="out", help="folder for results.json, junit.xml and report.html (default ./out)")
    run.add_argument("--known-failures", action="append", help="an extra known-failures file (known-failures/ is always read)")
    run.add_argument("--no-known-failures", action="store_true", help="ignore the known-failures lists (every failure is a FAIL)")
    run.add_argument("--diagonal", action="store_true", help="only cells where one peer spec plays every role (itself and the probe): for certifying a binding and for mutant runs")
    run.add_argument("--op-timeout", type=float, default=20.0, help="seconds a peer has to answer a command that does not wait on the broker (default 20)")
    run.add_argument("--in-docker", action="store_true", help="run each peer from its image (docker run -i --rm --network host IMAGE; build them with docker compose build); a peer whose image is missing is SKIP")
    run.add_argument("--no-build", action="store_true", help="do not run the peers' build commands")
    run.set_defaults(func=cmd_run)
    lst = sub.add_parser("list", help="list peers and scenarios")
    lst.add_argument("-v", "--verbose", action="store_true", help="with each scenario's title and procedure")
    lst.set_defaults(func=cmd_list)
    bench = sub.add_parser("bench", help="each binding's request/reply rate measured inside its peer, against its raw client; per pair")
    bench.add_argument("--peers", help="comma list of peer names (default: every peer)")
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
    doctor = sub.add_parser("doctor", help="which peers can run here, and why not")
    doctor.add_argument("--clean", action="store_true", help="remove the containers left by killed runs (those with the label org.acemq-interop.run)")
    doctor.set_defaults(func=cmd_doctor)
    return parser


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # A CI job's timeout sends SIGTERM: unwind like Ctrl-C, so the private broker node,
    # the run's vhost and the peer processes are still cleaned up.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"acemq-interop: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokerError as exc:
        print(f"acemq-interop: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("acemq-interop: interrupted", file=sys.stderr)
        return 130
