"""`acemq-interop list` and `doctor`: what the suite holds, and what can run here."""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from ..broker.endpoint import parse_broker_url
from ..broker.node import node_dir_roots
from ..core.errors import BrokerError, UsageError
from ..core.redact import BROKER_ENV
from ..peers.manifests import discover
from ..spec import scenarios as scenario_mod
from .common import EXIT_FAILED, EXIT_OK, peer_dirs


def cmd_list(args: argparse.Namespace) -> int:
    if args.rules or args.json:
        return _list_rules(args.json)
    manifests = discover(extra=peer_dirs(args))
    print("Peers (peers/*/peer.yaml):")
    for name, m in sorted(manifests.items()):
        print(f"  {name:<10} {m.language:<12} {m.description}")
    extra = [Path(d) for d in args.scenario_dir or []]
    print("\nScenarios (scenarios/**/*.yaml" + "".join(f", {d}" for d in extra) + "):")
    for s in scenario_mod.load_all(extra=extra):
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
    from ..peers.doctor import check_broker, check_containment, check_peer

    if args.broker:
        # A malformed --broker is bad input: refused (exit 2) before the checks start, not
        # found out after every toolchain was asked its version.
        parse_broker_url(args.broker, args.management_url)
    manifests = discover(extra=peer_dirs(args))
    ok = True
    broker_line, broker_ok = check_broker()
    print(broker_line)
    print(check_containment())
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
    from ..broker.leftovers import (leftover_nodes, leftover_tls_dirs, leftover_vhosts, sweep_nodes, sweep_tls_dirs,
                                    sweep_vhosts)
    from ..core.redact import broker_env, url as redacted

    if args.clean:
        sweep_nodes(print)
        sweep_tls_dirs(print)
    nodes = leftover_nodes()
    print(f"private nodes in {', '.join(str(r) for r in node_dir_roots())}: " + ("none" if not nodes else f"{len(nodes)}"))
    for left in nodes:
        print(f"  {left.line()}" + ("  (doctor --clean removes it)" if left.state == "owner dead" else ""))
    certificates = leftover_tls_dirs()
    print(f"TLS certificate folders of runs in {tempfile.gettempdir()}: " + ("none" if not certificates else f"{len(certificates)}"))
    for left in certificates:
        print(f"  {left.line()}" + ("  (doctor --clean removes it)" if left.state == "owner dead" else ""))
    broker = args.broker or broker_env()
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
