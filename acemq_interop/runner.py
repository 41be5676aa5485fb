"""A run: broker and vhost, peer builds and processes, cells in parallel, cleanup.

One process per peer per run, reused by every cell; cells run concurrently up to a bound;
the run's vhost (and with it every queue a cell might have left) is deleted at the end.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import cells as cellmod
from .broker import BrokerEndpoint, run_vhost
from .cells import ERROR, FAIL, PASS, SKIP, XFAIL, XPASS, Cell, CellResult
from .engine import RunContext, run_cell
from .errors import PeerError
from .known_failures import KnownFailure, match_known
from .manifests import Manifest, PeerSpec
from .peer_process import PeerProcess
from .scenarios import Scenario

BUILD_BOUND_S = 900


@dataclass
class PeerStatus:
    name: str
    language: str
    build_s: float | None = None
    startup_s: float | None = None
    hello: dict = field(default_factory=dict)
    unavailable: str | None = None  # why its cells SKIP (toolchain) or ERROR (build/start failed)
    broken: bool = False


@dataclass
class RunReport:
    results: list[CellResult]
    peers: dict[str, PeerStatus]
    specs: list[PeerSpec]
    broker: str
    duration_s: float
    started_at: str
    log_dir: Path
    vhost: str = ""

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def ok(self) -> bool:
        return not any(r.status in cellmod.BAD_STATUSES for r in self.results)


def build_peer(manifest: Manifest, log: Callable[[str], None]) -> tuple[float, str | None]:
    """Run the manifest's build commands; (seconds, None) or (seconds, what failed)."""
    started = time.monotonic()
    for argv in manifest.build:
        command = manifest.argv(argv)
        try:
            done = subprocess.run(command, cwd=manifest.cwd, env=manifest.environment(), capture_output=True, text=True,
                                  timeout=BUILD_BOUND_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return time.monotonic() - started, f"build step {' '.join(command)} failed: {exc}"
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            return time.monotonic() - started, f"build step {' '.join(command)} exited {done.returncode}:\n{tail}"
    took = time.monotonic() - started
    if manifest.build:
        log(f"built {manifest.name} in {took:.1f}s")
    return took, None


class Runner:
    def __init__(
        self,
        manifests: dict[str, Manifest],
        specs: list[PeerSpec],
        scenarios: list[Scenario],
        known: list[KnownFailure],
        broker_url: str | None,
        endpoint: BrokerEndpoint | None,
        concurrency: int,
        build: bool,
        log: Callable[[str], None],
        only_cells: list[str] | None = None,
        diagonal: bool = False,
        op_bound_s: float = 20.0,
        in_docker: bool = False,
        run_id: str | None = None,  # containers: the run label (acemq_interop.docker_engine)
    ):
        self.manifests = manifests
        self.specs = specs
        self.scenarios = scenarios
        self.known = known
        self.endpoint = endpoint
        self.broker_url = broker_url
        self.concurrency = concurrency
        self.build = build
        self.log = log
        self.only_cells = only_cells
        self.diagonal = diagonal
        self.op_bound_s = op_bound_s
        self.in_docker = in_docker
        self.run_id = run_id

    def run(self) -> RunReport:
        started = time.monotonic()
        started_at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        log_dir = Path(tempfile.mkdtemp(prefix="acemq-interop-logs-"))
        with run_vhost(self.endpoint, self.log) as (endpoint, management, vhost):
            processes: dict[str, PeerProcess] = {}
            try:
                amqp_url = endpoint.amqp_url(vhost)
                statuses = self._start_peers(amqp_url, processes, log_dir)
                ctx = RunContext(amqp_url=amqp_url, vhost=vhost, management=management, peers=processes, op_bound_s=self.op_bound_s)
                results = self._run_cells(ctx, statuses)
            finally:
                for process in processes.values():
                    process.shutdown()
        broker = "private node (rabbitmq-server)" if self.endpoint is None else f"{endpoint.host}:{endpoint.port}"
        return RunReport(results, statuses, self.specs, broker, time.monotonic() - started, started_at, log_dir, vhost)

    def _start_peers(self, amqp_url: str, processes: dict[str, PeerProcess], log_dir: Path) -> dict[str, PeerStatus]:
        statuses: dict[str, PeerStatus] = {}
        names = sorted({spec.name for spec in self.specs})
        for name in names:
            manifest = self.manifests[name]
            status = PeerStatus(name, manifest.language)
            statuses[name] = status
            if self.in_docker:
                # --in-docker: an engine that answers and the peer's image, else SKIP (never a pull, never a hang).
                from .docker_engine import peer_image_problem

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
            if self.build and manifest.build and not self.in_docker:
                status.build_s, failure = build_peer(manifest, self.log)
                if failure:
                    status.unavailable, status.broken = failure, True
                    self.log(f"peer {name}: build failed: {failure}")
                    continue
        # Start every peer at once: JVM and CLR start-up overlap instead of adding up.
        def start(name: str) -> None:
            status = statuses[name]
            try:
                process = PeerProcess(self.manifests[name], log_dir, self.in_docker, self.run_id)
                processes[name] = process
                status.hello = process.handshake(amqp_url, max(60.0, self.op_bound_s))
                status.startup_s = process.startup_s
                self.log(f"peer {name}: {status.hello.get('binding')} on {status.hello.get('client')}, ready in {status.startup_s:.2f}s")
            except PeerError as exc:
                status.unavailable, status.broken = str(exc), True
                self.log(f"peer {name}: {exc}")

        threads = [threading.Thread(target=start, args=(n,)) for n in names if statuses[n].unavailable is None]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return statuses

    def _run_cells(self, ctx: RunContext, statuses: dict[str, PeerStatus]) -> list[CellResult]:
        planned = cellmod.plan(self.scenarios, self.specs, self.diagonal)
        if self.only_cells:
            planned = [c for c in planned if c.id in self.only_cells]
        hellos = {name: s.hello for name, s in statuses.items()}
        results: list[CellResult] = []
        runnable: list[tuple[int, Cell]] = []
        for index, cell in enumerate(planned):
            broken = next((statuses[s.name] for s in cell.specs() if statuses[s.name].broken), None)
            if broken is not None:
                results.append(self._finish(CellResult(cell, ERROR, message=f"peer {broken.name}: {broken.unavailable}")))
                continue
            unavailable = {n: s.unavailable for n, s in statuses.items() if s.unavailable}
            reason = cellmod.skip_reason(cell, hellos, unavailable)
            if reason:
                results.append(self._finish(CellResult(cell, SKIP, reason=reason)))
                continue
            runnable.append((index, cell))
        total = len(planned)
        done = [len(results)]
        lock = threading.Lock()

        def one(index: int, cell: Cell) -> CellResult:
            result = self._finish(run_cell(cell, f"c{index:04d}", ctx))
            with lock:
                done[0] += 1
                detail = f" {result.rule}: {result.message}" if result.status == FAIL else (f" {result.message.splitlines()[0]}" if result.status == ERROR else "")
                self.log(f"[{done[0]}/{total}] {result.status:<5} {cell.id} ({result.duration_s:.1f}s){detail}")
            return result

        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:
            futures = [pool.submit(one, index, cell) for index, cell in runnable]
            for future in as_completed(futures):
                results.append(future.result())
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: the cells under way finish (each is bounded), the rest never
            # start, and the caller still cleans up the peers, the vhost and the node.
            self.log("interrupted: finishing the cells under way, skipping the rest")
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True)
        order = {cell.id: i for i, cell in enumerate(planned)}
        return sorted(results, key=lambda r: order[r.cell.id])

    def _finish(self, result: CellResult) -> CellResult:
        """Apply the known-failures list and attach the one-line rerun command."""
        known = match_known(result.cell.id, self.known)
        if known is not None:
            if result.status == FAIL and known.rule and result.rule != known.rule:
                result.reason = f"listed as a known failure of {known.rule} in {known.source}, but it broke {result.rule}"
            elif result.status in (FAIL, ERROR) and not (known.rule and result.status == ERROR):
                result.reason = f"{known.reason} ({known.link})" if known.link else known.reason
                result.status = XFAIL
            elif result.status == PASS:
                result.status = XPASS
                result.reason = f"listed as a known failure in {known.source} but passed: remove the entry ({known.reason})"
        peers = ",".join(sorted({s.label for s in result.cell.specs()}))
        broker = f" --broker {self.broker_url}" if self.broker_url else ""
        result.rerun = f"acemq-interop run --peers {peers} --cell '{result.cell.id}'{broker}"
        return result

