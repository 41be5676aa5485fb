"""A run: broker and vhost, peer builds and processes, cells in parallel, cleanup.

One process per peer per run, reused by every cell; cells run concurrently up to a bound;
the run's vhost (and with it every queue a cell might have left) is deleted at the end.
"""
from __future__ import annotations

import shutil
from contextlib import ExitStack
import tempfile
import threading
import time
from typing import Any
from functools import lru_cache
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import replace
from pathlib import Path


from ..spec import catalogue
from ..core import redact
from . import cells as cellmod
from ..core import signals
from ..broker.vhost import run_vhost
from ..broker.conditions import BrokerConditions, bounded_probe_factory
from ..broker.watch import BrokerWatch
from .cells import Cell
from ..results import presumptions
from .engine import RunContext, run_cell
from .request import BrokerContext, RunRequest
from ..core.errors import PeerError
from ..results.model import BrokerInfo, CellResult, PeerStatus, RunResult, Status
from ..peers.builds import build_peer, image_with_digest
from ..core.ownership import write_owner
from ..core.proc import process_cpu_s
from . import soak
from ..peers.client import PeerClient
from ..core.paths import SCENARIOS_DIR
from .sharding import TYPICAL_FILE_NAME, read_typical, select as shard_select
from ..core import suite_info
from .verdict import rerun_line, verdict

# Kept for callers of the old names: the result model lives in acemq_interop.results.model.
RunReport = RunResult
__all__ = ["Runner", "RunReport", "RunResult", "PeerStatus"]


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during the cells: a KeyboardInterrupt that carries what ran, so the
    CLI still writes the results files (every cell not run is ERROR saying so)."""

    def __init__(self, report: "RunResult"):
        super().__init__("interrupted")
        self.report = report


@lru_cache(maxsize=1)
def _typical() -> dict[str, float]:
    return read_typical(SCENARIOS_DIR / TYPICAL_FILE_NAME)


class Runner:
    """The cells of a request on one broker of its axis (the session runs one per broker)."""

    def __init__(self, request: RunRequest, broker: BrokerContext | None = None):
        self.options = request
        self.broker = broker
        self.log = request.log
        self.watch: "BrokerWatch | None" = None  # set by run(); a caller of _run_cells alone has none
        self.profile: dict[str, Any] | None = None  # with request.profile: this broker's CPU figures and cell waits

    def run(self) -> RunResult:
        o, b = self.options, self.broker
        assert b is not None, "a run needs its broker"
        started = time.monotonic()
        started_at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        started_iso = suite_info.now_iso()
        if b.log_dir is not None or o.out_dir is not None:
            log_dir = b.log_dir if b.log_dir is not None else o.out_dir / "logs"
            log_dir.mkdir(parents=True, exist_ok=True)
        else:
            log_dir = Path(tempfile.mkdtemp(prefix="acemq-interop-logs-"))
            write_owner(log_dir, "")  # whose it is, should this run be killed before it removes it
        self.cells_s = 0.0
        if not signals.installed():  # under the CLI a signal before now is the session's to raise
            signals.clear()
        self.watch: BrokerWatch | None = None
        self.aborted: str | None = None
        results: list[CellResult] = []
        statuses: dict[str, PeerStatus] = {}
        broker = b.info
        interrupted = False

        def lost() -> str | None:
            return self.watch.check() if self.watch is not None else None

        self._signal_stack = ExitStack()
        broker_left: dict[str, Any] = {"connections": None, "connections_left": None, "stale_connection_rows": None,
                                       "vhosts": None}
        with self._signal_stack, run_vhost(b.endpoint, self.log, lost=lost, checked=b.checked) as (endpoint, management, vhost):
            self.watch = BrokerWatch(endpoint, b.lost, self.log,
                                     conditions=BrokerConditions(management, vhost, self.log)).start()
            clients: dict[str, PeerClient] = {}
            try:
                amqp_url = endpoint.amqp_url(vhost)  # amqps:// on a TLS endpoint
                statuses = self._start_peers(amqp_url, clients, log_dir, endpoint.ca_file, endpoint.amqp_urls(vhost))
                from dataclasses import replace

                from ..amqp.broker_facts import direct_reply_to_return

                broker = replace(broker, direct_reply_to=direct_reply_to_return(amqp_url, endpoint.ca_file))
                ctx = RunContext(amqp_url=amqp_url, vhost=vhost, management=management, peers=dict(clients),
                                 op_bound_s=o.op_bound_s, broker=broker.label, broker_control=b.control,
                                 clocks={} if o.profile else None, cluster=b.cluster,
                                 amqp_urls=endpoint.amqp_urls(vhost))
                peer_cpu = {name: process_cpu_s(c.pid) for name, c in clients.items()} if o.profile else {}
                broker_cpu = b.cpu_s() if o.profile and b.cpu_s else None
                ctx.ca_file = endpoint.ca_file
                # A FAIL under a broker alarm (or a blocked connection) is an ERROR naming it; the
                # probe (verifying the broker against the run's CA, if any) is bounded while blocked.
                ctx.broker_condition = self.watch.condition
                ctx.probe_factory = bounded_probe_factory(o.op_bound_s, self.watch.condition, endpoint.ca_file)
                # -- transcripts (issue 13): one firehose consumer for the run --
                from ..amqp.transcript import start_tracer

                ctx.tracer = start_tracer(o.transcripts, amqp_url, management, vhost, self.log, endpoint.ca_file,
                                          endpoint.amqp_urls(vhost))
                ctx.keep_transcript = lambda r: o.transcripts == "all" or verdict(r.id, r.status, r.broken_clauses or r.rule, o.known).status != Status.PASS
                try:
                    results, interrupted = self._run_cells(ctx, statuses)
                    if o.profile:  # before the peers go: their CPU over the cells
                        self.profile = self._profile_of(ctx, results, peer_cpu, broker_cpu)
                finally:
                    with signals.deferred(reraise=False):
                        if ctx.tracer is not None:
                            ctx.tracer.stop()
            finally:
                # Once cells ran, a Ctrl-C (a second one, or a first one now) must neither
                # leave peer processes behind nor lose the results: the cleanup is bounded
                # (a peer that does not exit is killed) and runs with signals deferred;
                # one caught here makes the run an interrupted one.
                with signals.deferred(reraise=False):
                    self.watch.stop()
                    for client in clients.values():
                        client.shutdown()
                    self._peer_usage(clients, statuses)
                    # What the run leaves on its broker (the soak's figures): a connection
                    # still open in its vhost now is one the run did not close.
                    left = soak.connections_left(management, vhost, lost)
                    if left is not None:
                        broker_left.update(connections=len(left.open), connections_left=left.open,
                                           stale_connection_rows=left.stale)
                    if o.out_dir is None and b.log_dir is None:
                        # A run with no output folder (a library caller, a test) leaves no temporary
                        # folder behind: each cell already carries its peers' stderr tails.
                        shutil.rmtree(log_dir, ignore_errors=True)
        if not lost():
            broker_left["vhosts"] = soak.suite_vhosts(management)
        interrupted = interrupted or signals.pending()
        if self.watch.cause:
            self.aborted = f"broker lost: {self.watch.cause}"
        elif interrupted:
            self.aborted = "interrupted (Ctrl-C or SIGTERM)"
        meta = {
            "suite": suite_info.suite(),
            "command": o.command,
            "started_at": started_iso,
            "finished_at": suite_info.now_iso(),
            "cells_s": round(self.cells_s, 1),
            "selection": self.selection(),
            "shard": o.shard.label if o.shard else None,
            "scenario_files": {sc.id: suite_info.relative(sc.path) for sc in o.scenarios},
            "images": {name: image_with_digest(m.image or m.docker.get("image")) for name, m in o.manifests.items()
                       if (o.in_docker or m.image) and name in {s.name for s in o.specs}},
            "aborted": self.aborted,
            "broker_left": broker_left,
        }
        assert broker is not None
        report = RunResult(results, statuses, [s.label for s in o.specs], [broker], time.monotonic() - started,
                           started_at, str(log_dir), vhost, meta)
        if interrupted and not self.watch.cause:
            raise RunInterrupted(report)
        return report

    def _peer_usage(self, clients: dict[str, PeerClient], statuses: dict[str, PeerStatus]) -> None:
        """Each peer's usage and limits into its status (results.json), what the harness did to
        it and what of it could not be ended into the log."""
        shown = []
        for name, client in clients.items():
            process = client.process
            usage = process.usage.record()
            if name in statuses:  # none yet when the run was interrupted while its peers started
                statuses[name].usage, statuses[name].limits = usage, process.limits.record()
            for note in process.notes:
                self.log(note)
            if process.unended:
                self.log(f"peer {name}: could not end {', '.join(process.unended)}")
            shown.append(f"{name} {usage['peak_rss_mib']:g} MiB, {usage['peak_open_files']} files, {usage['cpu_s']:g} s CPU")
        if shown:
            self.log("peers at their peak: " + "; ".join(sorted(shown)))

    def _profile_of(self, ctx: RunContext, results: list[CellResult], peer_cpu: dict[str, float | None],
                    broker_cpu: float | None) -> dict[str, Any]:
        """This broker's part of `run --profile`: each peer's and the broker's CPU over the cells."""
        peers = {}
        for name, before in peer_cpu.items():
            now = process_cpu_s(ctx.peers[name].pid) if name in ctx.peers else None  # type: ignore[attr-defined]
            peers[name] = None if now is None or before is None else now - before
        now_broker = self.broker.cpu_s() if self.broker is not None and self.broker.cpu_s else None
        clocks = [(r.id, r.duration_s, ctx.clocks[r.id]) for r in results if ctx.clocks and r.id in ctx.clocks]
        return {"peers": peers, "broker": None if now_broker is None or broker_cpu is None else now_broker - broker_cpu,
                "clocks": clocks}

    def not_run(self, broker: BrokerInfo, why: str) -> RunResult:
        """The run's results when no cell could start (the broker failed pre-flight, or the
        run was interrupted first): every planned cell ERROR with that one cause, so the
        results files say what happened instead of an earlier run's files standing in."""
        o = self.options
        results = [self._finish(self._not_started_on(cell, broker.label, why)) for cell in self.planned()]
        meta = {"suite": suite_info.suite(), "command": o.command, "started_at": suite_info.now_iso(),
                "finished_at": suite_info.now_iso(), "cells_s": 0.0, "selection": self.selection(),
                "shard": o.shard.label if o.shard else None,
                "scenario_files": {sc.id: suite_info.relative(sc.path) for sc in o.scenarios}, "images": {},
                "aborted": why}
        return RunResult(results, {}, [s.label for s in o.specs], [broker], 0.0,
                         time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "", "", meta)

    @staticmethod
    def _not_started_on(cell: Cell, broker: str, why: str) -> CellResult:
        return cellmod.result_of(cell, Status.ERROR, broker, message=f"{why}\nthe cell did not start")

    def selection(self) -> dict[str, object]:
        """What was asked for, less the shard: shards of one selection can be merged."""
        o = self.options
        return {"peers": [s.label for s in o.specs], "scenarios": [sc.id for sc in o.scenarios],
                "diagonal": o.diagonal, "cells": sorted(o.only_cells) if o.only_cells else None,
                "shards": o.shard.total if o.shard else 1,
                # What each scenario presumes (`assumes:`): `merge` applies the presumptions
                # across shards, as one run applies them across its cells.
                "assumes": {sc.id: list(sc.assumes) for sc in o.scenarios if sc.assumes}}

    def planned(self) -> list[Cell]:
        """This run's cells (its shard's, with --shard), in plan order."""
        o = self.options
        planned = cellmod.plan(o.scenarios, o.specs, o.diagonal, o.interop)
        if o.only_cells:
            planned = [c for c in planned if c.id in o.only_cells]
        if o.shard:
            planned = shard_select(planned, o.shard, key=lambda c: c.id, cost=self.cost)
        return planned

    def cost(self, cell: Cell) -> float:
        """Seconds a cell is expected to take: an earlier run's figure (--durations), else the
        scenario's typical figure (scenarios/durations.json), else an estimate from its waits."""
        if cell.id in self.options.durations:
            return self.options.durations[cell.id]
        return _typical().get(cell.scenario.id, cell.scenario.estimate_s)

    def _start_peers(self, amqp_url: str, clients: dict[str, PeerClient], log_dir: Path,
                     ca_file: str | None = None, amqp_urls: list[str] | None = None) -> dict[str, PeerStatus]:
        """Build and start every selected peer; on a TLS run (`ca_file`) its hello carries the
        CA, its container sees the CA's folder, and a peer without the `tls` capability SKIPs."""
        o, b = self.options, self.broker
        tls = {"ca_file": ca_file} if ca_file is not None else None
        mounts = (Path(ca_file).parent,) if ca_file is not None else ()
        statuses: dict[str, PeerStatus] = {}
        names = sorted({spec.name for spec in o.specs})
        for name in names:
            manifest = o.manifests[name]
            status = PeerStatus(name, manifest.language,
                                foreign={k: v for k, v in manifest.foreign.items() if k in ("stack", "library")})
            statuses[name] = status
            if o.in_docker or manifest.image:
                # From an image: an engine that answers and the image, else SKIP (never a pull, never a hang).
                from ..core.docker_engine import peer_image_problem

                status.unavailable = peer_image_problem(manifest)
                if status.unavailable:
                    self.log(f"peer {name}: SKIP, {status.unavailable}")
                    continue
                missing = []
            else:
                missing = manifest.missing_tools()
            if missing:
                status.unavailable = f"toolchain missing: {', '.join(missing)} not on PATH (see peers/{manifest.folder.name}/README.md)"
                self.log(f"peer {name}: SKIP, {status.unavailable}")
                continue
            if o.build and manifest.build and not o.in_docker:
                # Built while the broker started (the CLI's Builds), else here.
                status.build_s, failure = b.builds.result(name) if b is not None and b.builds else build_peer(manifest, self.log)
                if failure:
                    status.unavailable, status.broken = failure, True
                    self.log(f"peer {name}: build failed: {failure}")
                    continue
        # Start every peer at once: JVM and CLR start-up overlap instead of adding up.
        def start(name: str) -> None:
            status = statuses[name]
            try:
                client = PeerClient.launch(o.manifests[name], log_dir, o.in_docker, o.op_bound_s, b.run_id if b else None, mounts)
                clients[name] = client
                status.hello = client.handshake(amqp_url, max(60.0, o.op_bound_s), tls, amqp_urls)
                status.startup_s = client.startup_s
                self.log(f"peer {name}: {status.hello.get('binding')} on {status.hello.get('client')}, ready in {status.startup_s:.2f}s")
            except PeerError as exc:
                status.unavailable, status.broken = str(exc), True
                self.log(f"peer {name}: {exc}")
                return
            # The offer is checked against the catalogue: an unknown mutant or profile is a
            # peer out of step with the suite, and every cell of it is an ERROR saying why.
            # The catalogue's history is per binding: an image peer (`go-rc=IMAGE`) is checked
            # as the binding its hello names.
            problems = catalogue.check_offer(client.binding, status.hello)
            if problems:
                status.unavailable, status.broken = f"its hello does not match the catalogue: {'; '.join(problems)}", True
                self.log(f"peer {name}: {status.unavailable}")
            elif tls is not None and "tls" not in status.hello.get("capabilities", []):
                # Not broken: a peer that does not speak TLS yet is fine on plain runs.
                status.unavailable = "does not speak TLS"
                self.log(f"peer {name}: SKIP, {status.unavailable} (no tls capability in its hello)")

        threads = [threading.Thread(target=start, args=(n,)) for n in names if statuses[n].unavailable is None]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return statuses

    def _run_cells(self, ctx: RunContext, statuses: dict[str, PeerStatus]) -> tuple[list[CellResult], bool]:
        """Every planned cell's result, and whether the run was interrupted.

        Every planned cell has a result whatever happens: once the broker is lost (the watch)
        or the run is interrupted, the cells not yet started are ERROR saying so, and a cell
        under way that ends other than PASS while the broker is gone is ERROR with the loss
        as its cause (its own message, a symptom, follows)."""
        o = self.options
        planned = self.planned()
        hellos = {name: s.hello for name, s in statuses.items()}
        results: list[CellResult] = []
        runnable: list[tuple[int, Cell]] = []
        for index, cell in enumerate(planned):
            broken = next((statuses[s.name] for s in cell.specs() if statuses[s.name].broken), None)
            if broken is not None:
                results.append(self._finish(cellmod.result_of(cell, Status.ERROR, ctx.broker,
                                                              message=f"peer {broken.name}: {broken.unavailable}")))
                continue
            unavailable = {n: s.unavailable for n, s in statuses.items() if s.unavailable}
            cell = cellmod.narrowed(cell, hellos, unavailable)
            reason = cellmod.skip_reason(cell, hellos, unavailable)
            if reason:
                results.append(self._finish(cellmod.result_of(cell, Status.SKIP, ctx.broker, reason=reason)))
                continue
            runnable.append((index, cell))
        total = len(planned)
        done = [len(results)]
        lock = threading.Lock()
        stop: list[str] = []  # set once: why no further cell starts

        def one(index: int, cell: Cell) -> CellResult:
            if not stop and self.watch is not None and self.watch.cause:
                stop.append(f"broker lost: {self.watch.cause}")
            if stop:
                return self._finish(self._not_started(cell, ctx, stop[0]))
            # A peer that exited, stopped answering or spoke out of protocol is out of the
            # run: its remaining cells ERROR at once with that cause, not one bound each.
            down = next((p for p in (ctx.peers.get(s.name) for s in cell.specs()) if p is not None and p.fault), None)
            if down is not None:
                result = cellmod.result_of(cell, Status.ERROR, ctx.broker, message=down.fault,
                                           stderr={down.name: down.stderr_tail()})
            else:
                result = self._broker_verdict(run_cell(cell, f"c{index:04d}", ctx))
            if self.watch is not None and self.watch.cause and not stop:
                stop.append(f"broker lost: {self.watch.cause}")
                self.log(f"broker lost: {self.watch.cause}; no further cell starts")
            result = self._finish(result)
            with lock:
                done[0] += 1
                detail = f" {result.rule}: {result.message}" if result.status == Status.FAIL else (f" {result.message.splitlines()[0]}" if result.status == Status.ERROR else "")
                self.log(f"[{done[0]}/{total}] {result.status:<5} {result.id} ({result.duration_s:.1f}s){detail}")
            return result

        # Longest first: the cells that mostly wait on timers start while the short ones fill
        # the gaps, so the run is not left waiting on a long cell started last.
        runnable.sort(key=lambda item: (-self.cost(item[1]), item[0]))
        cells_started = time.monotonic()
        pool = ThreadPoolExecutor(max_workers=o.concurrency)
        # A cell that faults the cluster's nodes (node_stop, rolling_restart...) would fault
        # every cell running beside it: those run last, one at a time.
        alone = [(index, cell) for index, cell in runnable if cell.scenario.node_faults]
        futures = {pool.submit(one, index, cell): cell for index, cell in runnable if not cell.scenario.node_faults}
        interrupted = False
        try:
            for future in as_completed(futures):
                results.append(future.result())
            for index, cell in alone:
                future = pool.submit(one, index, cell)
                futures[future] = cell
                results.append(future.result())
            # Every cell ended: from here a signal is recorded, never raised, so it cannot
            # turn what ran into "did not start" (the run is then an interrupted one).
            signals.disarm()
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: the cells under way finish (each is bounded), the rest never
            # start; a second one stops the waiting too. Every cell still gets a result.
            interrupted = True
            # From here to the end of the run a signal is recorded, never raised: it must
            # not lose what ran. A second one stops the waiting for the cells under way.
            self._signal_stack.enter_context(signals.absorbed())
            signals.note_interrupt()
            stop.append("interrupted (Ctrl-C or SIGTERM)")
            self.log("interrupted: finishing the cells under way, skipping the rest (again to stop waiting)")
            for future in futures:
                future.cancel()
            while not signals.again() and not all(f.done() for f in futures):
                wait(list(futures), timeout=0.2)
            if signals.again():
                self.log("interrupted again: not waiting for the cells under way")
            submitted = set(map(id, futures.values()))
            for _, cell in alone:  # never submitted: each is "not started", as a cancelled one is
                if id(cell) not in submitted:
                    never = Future()
                    never.cancel()
                    futures[never] = cell
            results = self._collect(futures, ctx, results)
        finally:
            pool.shutdown(wait=not interrupted, cancel_futures=True)
            self.cells_s = time.monotonic() - cells_started
        order = {cell.id: i for i, cell in enumerate(planned)}
        return sorted(self._presumed(results), key=lambda r: order[r.id]), interrupted

    def _presumed(self, results: list[CellResult]) -> list[CellResult]:
        """Failures a scenario sees only through a clause it presumes (`assumes:`), renamed
        to that clause where the same peer broke it in another cell (presumptions.py); a
        renamed cell gets its known-failure verdict again."""
        assumes = {s.id: s.assumes for s in self.options.scenarios if s.assumes}
        if not assumes:
            return results
        renamed = presumptions.apply(results, assumes)
        return [self._finish(replace(new, status=Status.FAIL)) if new is not old else old
                for old, new in zip(results, renamed)]

    def _collect(self, futures: dict, ctx: RunContext, early: list[CellResult]) -> list[CellResult]:
        """After an interrupt: each cell's result, or ERROR for one that did not start or did not end."""
        results = list(early)
        for future, cell in futures.items():
            if future.done() and not future.cancelled():
                results.append(future.result())
            elif future.cancelled():
                results.append(self._finish(self._not_started(cell, ctx, "interrupted (Ctrl-C or SIGTERM)")))
            else:
                results.append(self._finish(cellmod.result_of(cell, Status.ERROR, ctx.broker,
                                                              message="interrupted (Ctrl-C or SIGTERM)\nthe cell was under way")))
        seen: set[str] = set()
        return [r for r in results if not (r.id in seen or seen.add(r.id))]

    def _not_started(self, cell: Cell, ctx: RunContext, why: str) -> CellResult:
        return self._not_started_on(cell, ctx.broker, why)

    def _broker_verdict(self, result: CellResult) -> CellResult:
        """A cell that did not pass while the broker was lost is an ERROR of the broker: a
        fault is never a FAIL, and its own message is a symptom."""
        if result.status == Status.PASS or self.watch is None or self.watch.check() is None:
            return result
        symptom = (result.message or "").splitlines()[0][:300] if result.message else str(result.status)
        return replace(result, status=Status.ERROR, rule=None, expected=None, observed=None, seen_as=None, failures=[],
                       message=f"broker lost: {self.watch.cause}\nthe cell was under way; it ended with: {symptom}")

    def _finish(self, result: CellResult) -> CellResult:
        """The raw result with its final status (the known-failure verdict) and its rerun line."""
        final = verdict(result.id, result.status, result.broken_clauses or result.rule, self.options.known)
        reason = result.reason if final.reason is None else final.reason
        # What a peer or a library said may quote a URL with its password: every output
        # renders these, so they are redacted once, here.
        return replace(result, status=final.status, reason=redact.text(reason) if reason else reason,
                       message=redact.text(result.message) if result.message else result.message,
                       failures=[replace(f, message=redact.text(f.message)) for f in result.failures],
                       stderr={peer: redact.text(tail) for peer, tail in (result.stderr or {}).items()},
                       rerun=rerun_line([self._rerun_label(p) for p in result.peers], result.id,
                                        self.broker.url if self.broker else None,
                                        self.broker.rerun_flags if self.broker else self.options.rerun_flags))

    def _rerun_label(self, label: str) -> str:
        """An image peer reruns as `NAME=IMAGE`, so the rerun line starts the same peer."""
        manifest = self.options.manifests.get(label.split("@")[0].split("+")[0])
        return f"{manifest.name}={manifest.image}" if manifest is not None and manifest.image and label == manifest.name else label
