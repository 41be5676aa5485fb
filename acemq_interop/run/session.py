"""One run session, whoever asks for it (the `run` command, the project's tests): the broker
axis, the peer builds, the run's TLS certificates, the stress processes, the containers'
cleanup, the runs combined into one result, and the comparison with a baseline.

Every broker of the axis is started in turn (`Broker`: a private node, a container, a URL, or
one the caller hands over), described once (`BrokerInfo.from_overview`) and given to the
runner as a `BrokerContext`; the cells of each run on it. Whatever happens, the outcome holds
a result for every planned cell: a broker that fails before any cell makes every cell an
ERROR saying so, and the failure is handed back for the caller to report.
"""
from __future__ import annotations

import shutil
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ..broker.lifecycle import Broker, BrokerSource
from ..broker.node import no_broker_message
from ..core import signals
from ..core.containment import Containment, ContainmentRecord
from ..core.docker_engine import new_run_id, remove_run
from ..core.errors import BrokerError
from ..core.redact import text as redacted
from ..results.model import BrokerInfo, RunResult, combine_runs
from . import cells as cellmod
from .request import BrokerContext, RunRequest
from .runner import RunInterrupted, Runner
from .selection import check_cells


@dataclass
class SessionOutcome:
    """What a session came to: the combined result of every broker's run (every planned cell
    has a result), and why it is not a whole verdict when it is not."""

    report: RunResult
    interrupted: bool = False  # Ctrl-C or SIGTERM: the cells that ran keep their results
    aborted: str | None = None  # a broker lost or unusable after some cells ran
    failure: BaseException | None = None  # the broker unusable or an interrupt before any cell: re-raise it
    comparison: Any = None  # with a baseline: results.compare's Comparison
    profile: dict[str, Any] | None = None  # run --profile: where the time went


def check_request(request: RunRequest) -> None:
    """What can be refused before anything starts: a --cell that names no cell, a private
    node where rabbitmq-server is not installed."""
    check_cells(cellmod.plan(request.scenarios, request.specs, request.diagonal, request.interop), request.only_cells)
    if any(s.kind == "node" or (s.kind == "cluster" and not s.image) for s in request.brokers) \
            and shutil.which("rabbitmq-server") is None \
            and not Path("/usr/sbin/rabbitmq-server").exists():
        raise BrokerError(no_broker_message())


def run_session(request: RunRequest) -> SessionOutcome:
    check_request(request)
    log = request.log
    # From here to the end of the session the harness adopts every orphan of what it starts
    # (core/containment.py), and at the end ends whatever a peer left.
    containment = Containment().__enter__()
    if containment.problem:
        log(f"containment: the harness cannot adopt the orphans of its peers here ({containment.problem}); "
            "a process a peer starts in a session of its own may outlive the run")
    try:
        outcome = _run_session(request, log)
    finally:
        record = containment.close()
        _say_containment(record, log)
    outcome.report.meta["containment"] = record.record()
    return outcome


def _say_containment(record: ContainmentRecord, log: Callable[[str], None]) -> None:
    if record.ended:
        log(f"containment: ended {len(record.ended)} process(es) the run's peers left: {'; '.join(record.ended)}")
    if record.left:
        log(f"containment: could not end {len(record.left)} process(es): {'; '.join(record.left)}")


def _run_session(request: RunRequest, log: Callable[[str], None]) -> SessionOutcome:
    run_id = new_run_id()
    uses_docker = request.in_docker or any(s.image for s in request.brokers) or \
        any(m.image for m in request.manifests.values())
    reports: list[RunResult] = []
    builds = None
    if request.build and not request.in_docker:
        from ..peers.builds import Builds

        # The peers build while the broker starts: the two used to add up.
        selected = sorted({s.name for s in request.specs})
        builds = Builds([request.manifests[n] for n in selected if not request.manifests[n].image], log)
    outcome = SessionOutcome(report=RunResult([], {}, [], [], 0.0, ""))
    profiles: list[dict[str, Any] | None] = []
    sampler = None
    if request.profile:
        from .profile import Sampler, harness_cpu_s

        harness_before, wall_started, sampler = harness_cpu_s(), time.monotonic(), Sampler().start()
    stack = ExitStack()  # the run's certificates (with --tls) outlive the brokers and containers that use them
    try:
        if request.cpu_hog:
            from .cpu_hog import cpu_hogs

            stack.enter_context(cpu_hogs(request.cpu_hog, log))
        from ..broker.leftovers import sweep_tls_dirs

        sweep_tls_dirs(log)  # certificate folders (with a key) SIGKILLed runs left, by owner record only
        certificates = None
        if request.tls and any(s.kind not in ("url", "given") for s in request.brokers):
            from ..broker.leftovers import owned_certificates

            # Made for this run, removed at its end (the ExitStack), whatever happens; its
            # owner record lets the next run remove it after a SIGKILL.
            certificates = stack.enter_context(owned_certificates())
            log(f"TLS: a CA and a server certificate for this run in {certificates.dir} (removed at the end)")
        for index, source in enumerate(request.brokers):  # the broker axis, one after the other
            try:
                # From here a signal raises where it is handled below (before now it was only
                # recorded, and is raised here); the runner disarms it once the cells ended.
                signals.arm()
                with Broker(source, log, run_id, index, tls=certificates) as broker:
                    assert broker.endpoint is not None
                    info = BrokerInfo.from_overview(broker.overview, tls=broker.endpoint.tls)
                    logs = request.out_dir / "logs" / (info.label if len(request.brokers) > 1 else "") if request.out_dir else None
                    context = BrokerContext(
                        endpoint=broker.endpoint, info=info, run_id=run_id,
                        rerun_flags=(*request.rerun_flags, *(("--broker-image", source.image) if source.image else ()),
                                     *(("--cluster", str(source.nodes)) if source.kind == "cluster" else ())),
                        url=source.url, log_dir=logs, lost=broker.lost, control=broker.control(), builds=builds,
                        cpu_s=broker.cpu_s, cluster=broker.cluster())
                    runner = Runner(request, context)
                    reports.append(runner.run())
                    profiles.append(runner.profile)
                if signals.pending():  # caught while the node stopped: the next broker does not start
                    outcome.interrupted = True
                    break
            except RunInterrupted as stopped:
                signals.disarm()
                signals.absorb()  # a further signal must not lose what ran: the caller writes it
                reports.append(stopped.report)
                outcome.interrupted = True
                break
            except BrokerError as exc:
                signals.disarm()
                if not reports:
                    # Every planned cell ERROR with the cause, and the failure for the caller to say.
                    outcome.report = _not_run(request, source, f"broker unusable: {exc}")
                    outcome.failure = exc
                    return outcome
                outcome.aborted = f"{source.describe()}: {exc}"  # an earlier broker's cells still count
                break
            except KeyboardInterrupt as exc:
                signals.disarm()
                if not reports:
                    signals.absorb()
                    outcome.report = _not_run(request, source, "interrupted (Ctrl-C or SIGTERM) before any cell ran")
                    outcome.failure = exc
                    return outcome
                outcome.interrupted = True
                break
    finally:
        signals.disarm()  # what ran is only written out from here
        if builds is not None:
            builds.cancel()  # after an interrupt, no build outlives the run
        if uses_docker:
            left = remove_run(run_id)
            if left:
                log(f"containers of run {run_id} could not be removed: {', '.join(left)} (acemq-interop doctor --clean)")
        stack.close()
    outcome.report = combine_runs(reports)
    if sampler is not None:
        sampler.stop()
        outcome.profile = _profile(profiles, sampler, harness_cpu_s() - harness_before, time.monotonic() - wall_started)
    outcome.aborted = outcome.report.meta.get("aborted") or outcome.aborted
    if outcome.aborted:
        outcome.report.meta["aborted"] = outcome.aborted
    if request.baseline is not None and not outcome.interrupted and not outcome.aborted:
        from ..results.compare import compare
        from ..results.files import results_data

        outcome.comparison = compare(dict(request.baseline), results_data(outcome.report))
    return outcome


def _profile(runs: list[dict[str, Any] | None], sampler: Any, harness_s: float, wall_s: float) -> dict[str, Any]:
    """One profile of the session: the brokers' and peers' CPU summed over the axis."""
    from .profile import cells_summary

    peers: dict[str, float | None] = {}
    broker: float | None = None
    clocks = []
    for run in runs:
        if run is None:
            continue
        for name, seconds in run["peers"].items():
            peers[name] = None if seconds is None or peers.get(name, 0) is None else (peers.get(name) or 0) + seconds
        if run["broker"] is not None:
            broker = (broker or 0) + run["broker"]
        clocks += run["clocks"]
    return {"wall_s": round(wall_s, 1),
            "cpu_s": {"harness": round(harness_s, 1), "broker": None if broker is None else round(broker, 1),
                      "peers": {k: None if v is None else round(v, 1) for k, v in sorted(peers.items())}},
            "cells": cells_summary(clocks), "harness": sampler.top(),
            "samples": {"taken": sampler.samples, "waiting": sampler.waiting}}


def _not_run(request: RunRequest, source: BrokerSource, why: str) -> RunResult:
    """The run's result when no cell could start: every planned cell ERROR with that one cause."""
    return Runner(replace(request, log=lambda line: None)).not_run(BrokerInfo(source.describe()), redacted(why))
