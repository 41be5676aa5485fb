"""The result of a run as plain data: statuses, cells, peers, brokers, and the summaries.

The bottom floor of the harness: this module imports nothing of it but the catalogue
(for rule titles). The runner builds a `RunResult`; every report (console, JSON, JUnit,
HTML, Markdown) renders it, and none regroups the cells: the pair matrix, the per-peer
table, the per-rule table, the status counts and the non-PASS list are computed once, here,
when the result is made.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable


class Status(str, Enum):
    """A cell's final status. A `str`, so `Status.PASS == "PASS"` and JSON shows the name."""

    PASS = "PASS"
    FAIL = "FAIL"
    ERROR = "ERROR"
    SKIP = "SKIP"
    XFAIL = "XFAIL"
    XPASS = "XPASS"

    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def bad(self) -> bool:
        """Fails the run: a FAIL, an ERROR, or a known failure that passed."""
        return self in BAD_STATUSES


BAD_STATUSES = frozenset({Status.FAIL, Status.ERROR, Status.XPASS})
# The order statuses are counted in (console, JSON) and the order a group's worst is taken in.
COUNT_ORDER = (Status.PASS, Status.FAIL, Status.ERROR, Status.SKIP, Status.XFAIL, Status.XPASS)
WORST_FIRST = (Status.XPASS, Status.ERROR, Status.FAIL, Status.XFAIL, Status.SKIP, Status.PASS)
# The matrices a scenario's cells land in (Scenario.matrix), with the per-peer table's titles.
MATRIX_COLUMNS = (
    ("requesters", "as requester vs probe"),
    ("responders", "as responder vs probe"),
    ("pairs", "in pairs (either role)"),
    ("mixed", "mixed gathers"),
    ("other", "other"),
)
PROBE = "probe"


@dataclass(frozen=True)
class BrokerInfo:
    """The broker a cell ran on: `label` is what reports and cells call it."""

    label: str
    product: str | None = None
    version: str | None = None
    erlang: str | None = None
    tls: bool = False  # every client of the run reached it over TLS (amqps)
    # What it does with a mandatory reply to a direct reply-to address, measured on it
    # (amqp/broker_facts.py): `returned` (3.10-4.1: delivered and returned), `not returned` (4.2+).
    direct_reply_to: str | None = None

    @classmethod
    def from_overview(cls, overview: dict[str, Any], tls: bool = False) -> "BrokerInfo":
        """What the management API's /api/overview says of a broker; labelled for the broker
        axis as `rabbitmq-4.0.5` (`rabbitmq-unknown` when it does not say its version)."""
        product = overview.get("product_name") or ("RabbitMQ" if overview.get("rabbitmq_version") else None)
        version = overview.get("product_version") or overview.get("rabbitmq_version")
        slug = (product or "rabbitmq").lower().replace(" ", "-")
        return cls(f"{slug}-{version}" if version else f"{slug}-unknown", product, version,
                   overview.get("erlang_version"), tls=tls)

    @property
    def description(self) -> str:
        what = " ".join(p for p in (self.product, self.version) if p)
        drt = f"a mandatory direct reply-to reply {self.direct_reply_to}" if self.direct_reply_to else ""
        extra = ", ".join(p for p in (what, f"Erlang {self.erlang}" if self.erlang else "", "over TLS" if self.tls else "", drt) if p)
        return f"{self.label} ({extra})" if extra else self.label

    @property
    def shown(self) -> str:
        """The label, and how it was reached when that was TLS: `rabbitmq-3.10.8 over TLS`."""
        return f"{self.label} over TLS" if self.tls else self.label


@dataclass
class PeerStatus:
    """One peer process of a run: its build, its start-up, its `hello`, or why it is unavailable."""

    name: str
    language: str
    build_s: float | None = None
    startup_s: float | None = None
    hello: dict[str, Any] = field(default_factory=dict)
    unavailable: str | None = None  # why its cells SKIP (toolchain) or ERROR (build/start/offer failed)
    broken: bool = False
    # A stack that is not acemq (its manifest's `foreign:`: stack, library): its cells make the
    # foreign-interop matrix and stay out of the conformance tables.
    foreign: dict[str, str] = field(default_factory=dict)
    # What its processes took (peak memory, open files, CPU, output) and its limits
    # (peers/limits.py), once it ran; None for a peer that never started.
    usage: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None


@dataclass(frozen=True)
class Failure:
    """One broken clause in a cell: what broke, whose side broke it, and the evidence.

    `peer` is the label of the peer playing the obliged side (`side`, from the catalogue) in
    the cell's role `role`; None when the role is played by several peers and the cell
    cannot tell which one broke it (`suspects` then lists them): never the probe.
    `check` says which check saw it (`step 5 expect: call.outcome equals 'reply'`), `at`
    is the index of that check's entry in the cell's trace (the evidence, one click away).
    """

    clause: str
    rule: str
    side: str
    role: str | None
    peer: str | None
    check: str
    message: str
    expected: Any = None
    observed: Any = None
    seen_as: str | None = None  # the clause of the check that saw it, for a consequence_of check
    at: int | None = None
    suspects: tuple[str, ...] = ()
    # For a consequence_of check: the role its own clause (`seen_as`) would charge, should
    # the broker's transcript refute the attribution; and what the wire said of it.
    seen_by: str | None = None
    wire: str | None = None
    # Other checks of the cell that saw the same clause broken by the same peer: one defect is
    # one entry of a cell's to-do, however many checks see it.
    also: tuple[str, ...] = ()
    # Seen directly, not through a check's reading of a consequence: a call that never ended,
    # a part declared lacking. A presumed clause never renames it (not kept in results.json).
    direct: bool = False

    def record(self) -> dict[str, Any]:
        out = {"clause": self.clause, "rule": self.rule, "side": self.side, "role": self.role, "peer": self.peer,
               "check": self.check, "message": self.message, "expected": self.expected, "observed": self.observed}
        if self.seen_as:
            out["seen_as"] = self.seen_as
        if self.at is not None:
            out["at"] = self.at
        if self.suspects:
            out["suspects"] = list(self.suspects)
        if self.wire:
            out["wire"] = self.wire
        if self.also:
            out["also"] = list(self.also)
        return out

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "Failure":
        return cls(clause=str(record.get("clause") or ""), rule=str(record.get("rule") or ""),
                   side=str(record.get("side") or "either"), role=record.get("role"), peer=record.get("peer"),
                   check=str(record.get("check") or ""), message=str(record.get("message") or ""),
                   expected=record.get("expected"), observed=record.get("observed"), seen_as=record.get("seen_as"),
                   at=record.get("at"), suspects=tuple(record.get("suspects") or ()), wire=record.get("wire"),
                   also=tuple(record.get("also") or ()))


@dataclass(frozen=True)
class NotEvaluated:
    """A check a cell could not make: an earlier step did not produce what it reads."""

    clause: str
    check: str
    needs: str  # what was missing: `needs m (no message on c0001.requests: RR-1.1)`

    def record(self) -> dict[str, Any]:
        return {"clause": self.clause, "check": self.check, "needs": self.needs}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "NotEvaluated":
        return cls(str(record.get("clause") or ""), str(record.get("check") or ""), str(record.get("needs") or ""))


@dataclass
class CellResult:
    """One cell's result, with what describes the cell as plain data.

    `roles` maps each role to the label of the peer spec playing it, the list of labels of
    an `all-peers` role, or "probe". `peers` is every spec label of the cell, in role order.
    """

    id: str
    scenario: str
    title: str
    matrix: str
    rules: tuple[str, ...]
    roles: dict[str, Any]
    peers: tuple[str, ...]
    status: Status
    broker: str = ""
    duration_s: float = 0.0
    rule: str | None = None  # the clause a FAIL broke (RR-4.2; a rule id in results from before clauses)
    message: str = ""
    expected: Any = None
    observed: Any = None
    trace: list[dict[str, Any]] = field(default_factory=list)
    stderr: dict[str, str] = field(default_factory=dict)
    reason: str = ""  # why SKIP / XFAIL / XPASS
    rerun: str = ""
    # The broker's firehose record of the cell's namespace (acemq_interop/amqp/transcript.py):
    # kept for non-PASS cells (every cell with --transcripts all); None when not kept.
    transcript: list[dict[str, Any]] | None = None
    # Why that transcript misses part of the cell (the tracer's connection was lost while it
    # ran), or "": such a transcript judges what it shows and nothing it lacks.
    transcript_gap: str = ""
    # The clauses the scenario's checks assert (derived by the loader); `rules` are theirs.
    clauses: tuple[str, ...] = ()
    # A FAIL seen through another clause's check (`consequence_of`): the clause that check
    # asserts. `rule` is still the clause broken.
    seen_as: str | None = None
    # Every clause the cell saw broken, in the order seen (the first is `rule`, `message`,
    # `expected`, `observed`), each charged to the peer of its side; and the checks an
    # earlier failure left without input.
    failures: list[Failure] = field(default_factory=list)
    not_evaluated: list[NotEvaluated] = field(default_factory=list)
    level: str = ""  # the conformance level its scenario counts under (scenarios.LEVELS)

    def __post_init__(self) -> None:
        self.status = Status(self.status)
        if self.status == Status.FAIL and not self.failures and self.rule:
            # A result from before failures were listed (results.json schema 1): its one FAIL.
            self.failures = [Failure(self.rule, self.rule.partition(".")[0], "either", None, None, "", self.message,
                                     self.expected, self.observed, self.seen_as)]

    @property
    def broken_clauses(self) -> list[str]:
        """Every clause the cell broke, once each, in the order first seen."""
        return list(dict.fromkeys(f.clause for f in self.failures))

    def charged(self, label: str) -> bool:
        """Whether this cell's FAIL is charged to the peer `label`: a failure of its side names
        it, or names no one and lists it as a suspect; a cell whose failures name no peer at
        all (a result from before sides) charges every peer of the cell."""
        if not any(f.peer or f.suspects for f in self.failures):
            return label in self.peers
        return any(f.peer == label or (f.peer is None and label in f.suspects) for f in self.failures)

    @property
    def peer_labels(self) -> list[str]:
        """Distinct spec labels, in order (a peer playing two roles counts once)."""
        return list(dict.fromkeys(self.peers))


@dataclass(frozen=True)
class Counts:
    """Statuses of a group of cells, and the ids of the cells, in run order."""

    cells: tuple[str, ...]
    by_status: dict[Status, int]

    @property
    def total(self) -> int:
        return len(self.cells)

    @property
    def passed(self) -> int:
        return self.by_status.get(Status.PASS, 0)

    @property
    def worst(self) -> Status | None:
        return next((s for s in WORST_FIRST if self.by_status.get(s)), None)

    @property
    def text(self) -> str:
        """`7/7` when all pass; otherwise the pass count and the non-pass statuses."""
        extra = [f"{self.by_status[s]} {s}" for s in (Status.FAIL, Status.ERROR, Status.XPASS, Status.XFAIL, Status.SKIP)
                 if self.by_status.get(s)]
        return f"{self.passed}/{self.total}" + (" " + " ".join(extra) if extra else "")


def counts_of(results: Iterable[CellResult]) -> Counts:
    chosen = list(results)
    by_status: dict[Status, int] = defaultdict(int)
    for r in chosen:
        by_status[r.status] += 1
    return Counts(tuple(r.id for r in chosen), dict(by_status))


@dataclass(frozen=True)
class PairMatrix:
    """Requester (rows) x responder (columns) over the `pairs` scenarios of one broker."""

    broker: str
    labels: tuple[str, ...]
    cells: dict[tuple[str, str], Counts]  # (requester, responder) -> counts; absent: no cell


@dataclass(frozen=True)
class ProbeGrid:
    """Peer (rows) x scenario (columns) over one probe matrix (`requesters`, `responders`) of one broker."""

    matrix: str
    broker: str
    labels: tuple[str, ...]
    scenarios: tuple[str, ...]
    cells: dict[tuple[str, str], str]  # (peer label, scenario id) -> cell id; absent: no cell


@dataclass(frozen=True)
class PeerRow:
    """One peer spec's line of the per-peer conformance table: matrix -> counts."""

    label: str
    columns: dict[str, Counts]


@dataclass(frozen=True)
class RuleRow:
    rule: str
    title: str
    checked_by: tuple[str, ...]  # ids of the scenarios asserting a clause of this rule, in run order
    failing: tuple[str, ...]  # "broke it": ids of the cells whose FAIL names a clause of this rule
    # "broke because of it" seen from here: ids of the cells where a check of this rule failed
    # because another rule's clause broke (its `consequence_of`); they count under that rule.
    seen_as: tuple[str, ...] = ()
    clauses_by: dict[str, tuple[str, ...]] = field(default_factory=dict)  # scenario id -> its clauses of this rule


@dataclass(frozen=True)
class TodoItem:
    """One line of a peer's to-do list: a clause it broke, in how many cells, and the
    clearest of them (the fewest other clauses broken beside it, a probe cell first)."""

    clause: str
    cells: tuple[str, ...]
    clearest: str
    failure: Failure


@dataclass(frozen=True)
class Summary:
    """Everything a report shows besides the cells themselves, computed once."""

    status_counts: dict[Status, int]
    pair_matrices: tuple[PairMatrix, ...]  # one per broker with pair cells
    peer_columns: tuple[tuple[str, str], ...]  # (matrix, title) of the columns in use
    peer_rows: tuple[PeerRow, ...]
    rules: tuple[RuleRow, ...]
    scenarios: dict[str, tuple[str, ...]]  # scenario id -> its cell ids, in run order
    non_pass: tuple[str, ...]  # every cell not PASS, in run order
    problems: tuple[str, ...]  # FAIL, ERROR and XPASS cells: they fail the run
    xfails: tuple[str, ...]
    probe_grids: tuple[ProbeGrid, ...] = ()  # issue 13: the peer x scenario grids of the probe cells
    # peer label -> every clause that peer broke, once, worst first (most cells): its to-do list
    todo: dict[str, tuple[TodoItem, ...]] = field(default_factory=dict)
    # FAIL cells whose failures name no peer (several could have broken it): shown apart
    unattributed: tuple[str, ...] = ()
    # peer label -> level -> its cells at that level, a FAIL counted only where charged
    levels: dict[str, dict[str, Counts]] = field(default_factory=dict)
    # The cells with a stack that is not acemq in them (results/foreign.py): kept out of every
    # table above, their FAILs fail no run (a foreign stack breaks the spec by design), and
    # read as the foreign-interop matrix.
    foreign_cells: tuple[str, ...] = ()
    foreign_rows: tuple[Any, ...] = ()  # results.foreign.ForeignRow


def summarise(results: list[CellResult], labels: list[str], brokers: list[str],
              rule_titles: dict[str, str], peers: dict[str, PeerStatus] | None = None) -> Summary:
    from . import foreign

    stacks = foreign.foreign_peers(peers or {})
    everything = results
    results = [r for r in everything if not foreign.is_foreign_cell(r, stacks)]
    labels = [label for label in labels if foreign._name(label) not in stacks]
    outside = tuple(r.id for r in everything if foreign.is_foreign_cell(r, stacks))
    status_counts = {s: n for s, n in counts_of(results).by_status.items()}
    matrices = []
    for broker in brokers:
        by_pair: dict[tuple[str, str], list[CellResult]] = defaultdict(list)
        for r in results:
            if r.matrix == "pairs" and r.broker == broker:
                by_pair[(r.roles["requester"], r.roles["responder"])].append(r)
        if by_pair:
            matrices.append(PairMatrix(broker, tuple(labels), {k: counts_of(v) for k, v in by_pair.items()}))
    by_peer: dict[str, dict[str, list[CellResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        for label in r.peer_labels:
            by_peer[label][r.matrix].append(r)
    used = tuple(c for c in MATRIX_COLUMNS if any(by_peer[label].get(c[0]) for label in labels))
    # A FAIL counts against a peer only where it is charged: the innocent side of a pair passed.
    rows = tuple(PeerRow(label, {key: _counts_for(label, by_peer[label][key]) for key, _ in used if by_peer[label].get(key)})
                 for label in labels)
    scenarios: dict[str, list[str]] = defaultdict(list)
    # rule -> scenario -> the clauses of that rule it asserts (from the checks, not `rules:`)
    checked: dict[str, dict[str, list[str]]] = defaultdict(dict)
    failing: dict[str, list[str]] = defaultdict(list)
    seen_as: dict[str, list[str]] = defaultdict(list)
    for r in results:
        if r.scenario not in scenarios:
            # Results written before clauses carry only rules: those stand for themselves.
            for clause in r.clauses or r.rules:
                checked[_rule_of(clause)].setdefault(r.scenario, []).append(clause)
        scenarios[r.scenario].append(r.id)
        if r.status == Status.FAIL and r.rule:
            # Every clause the cell broke counts under its rule, once per cell.
            for rule in dict.fromkeys(_rule_of(c) for c in r.broken_clauses or [r.rule]):
                failing[rule].append(r.id)
            seen = [(f.seen_as, f.rule) for f in r.failures if f.seen_as] or [(r.seen_as, _rule_of(r.rule))]
            for through, broke in seen:
                if through and _rule_of(through) != broke and r.id not in seen_as[_rule_of(through)]:
                    seen_as[_rule_of(through)].append(r.id)
    rules = tuple(RuleRow(rid, title, tuple(checked.get(rid, {})), tuple(failing.get(rid, ())), tuple(seen_as.get(rid, ())),
                          {sid: tuple(c for c in cs if c != rid) for sid, cs in checked.get(rid, {}).items()})
                  for rid, title in rule_titles.items())
    return Summary(
        status_counts=status_counts,
        pair_matrices=tuple(matrices),
        peer_columns=used,
        peer_rows=rows,
        rules=rules,
        scenarios={k: tuple(v) for k, v in scenarios.items()},
        non_pass=tuple(r.id for r in results if r.status != Status.PASS),
        # A foreign cell fails the run only by a fault (ERROR) or an XPASS, never by a FAIL.
        problems=tuple(r.id for r in everything if r.status in BAD_STATUSES
                       and (r.id not in outside or r.status != Status.FAIL)),
        xfails=tuple(r.id for r in results if r.status == Status.XFAIL),
        probe_grids=_probe_grids(results, labels, brokers),
        todo=_todo(results),
        unattributed=tuple(r.id for r in results if r.status == Status.FAIL and r.failures
                           and any(f.peer is None for f in r.failures)),
        levels=_levels(results, labels),
        foreign_cells=outside,
        foreign_rows=foreign.matrix(everything, peers or {}) if stacks else (),
    )


def _levels(results: list[CellResult], labels: list[str]) -> dict[str, dict[str, Counts]]:
    """Each peer's cells by conformance level (request/reply core, full, scatter-gather)."""
    by: dict[str, dict[str, list[CellResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        if r.level:
            for label in r.peer_labels:
                by[label][r.level].append(r)
    return {label: {level: _counts_for(label, cells) for level, cells in by[label].items()} for label in labels if label in by}


def _counts_for(label: str, results: list[CellResult]) -> Counts:
    by_status: dict[Status, int] = defaultdict(int)
    for r in results:
        by_status[Status.PASS if r.status == Status.FAIL and not r.charged(label) else r.status] += 1
    return Counts(tuple(r.id for r in results), dict(by_status))


_PROBE_FIRST = {"requesters": 0, "responders": 0, "pairs": 1, "mixed": 2, "other": 3}


def _todo(results: list[CellResult]) -> dict[str, tuple[TodoItem, ...]]:
    """Each peer's broken clauses, once each: the cells, and the clearest cell's evidence."""
    found: dict[str, dict[str, list[tuple[CellResult, Failure]]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        if r.status != Status.FAIL:
            continue
        for f in r.failures:
            # A failure no evidence pins on one member of a shared role is on no member's list:
            # it is listed once, as shared (RunSummary.unattributed), with its suspects.
            for label in [f.peer] if f.peer else []:
                if not any(c.id == r.id for c, _ in found[label][f.clause]):
                    found[label][f.clause].append((r, f))
    todo: dict[str, tuple[TodoItem, ...]] = {}
    for label, clauses in found.items():
        items = []
        for clause, seen in clauses.items():
            cell, failure = min(seen, key=lambda cf: (len(cf[0].broken_clauses), _PROBE_FIRST.get(cf[0].matrix, 3),
                                                      cf[1].peer is None, cf[0].duration_s))
            items.append(TodoItem(clause, tuple(c.id for c, _ in seen), cell.id, failure))
        todo[label] = tuple(sorted(items, key=lambda i: (-len(i.cells), i.clause)))
    return todo


def _probe_grids(results: list[CellResult], labels: list[str], brokers: list[str]) -> tuple[ProbeGrid, ...]:
    grids = []
    for broker in brokers:
        for matrix in ("requesters", "responders"):
            chosen = [r for r in results if r.matrix == matrix and r.broker == broker and len(r.peer_labels) == 1]
            if chosen:
                grids.append(ProbeGrid(matrix, broker, tuple(label for label in labels if any(r.peer_labels[0] == label for r in chosen)),
                                       tuple(dict.fromkeys(r.scenario for r in chosen)),
                                       {(r.peer_labels[0], r.scenario): r.id for r in chosen}))
    return tuple(grids)


def _rule_of(rule_or_clause: str) -> str:
    return rule_or_clause.partition(".")[0]


@dataclass
class RunResult:
    """A whole run: its cells, peers and brokers, and the summaries every report renders."""

    results: list[CellResult]
    peers: dict[str, PeerStatus]
    labels: list[str]  # the selected peer specs' labels, in the order given
    brokers: list[BrokerInfo]
    duration_s: float
    started_at: str
    log_dir: str = ""
    vhost: str = ""
    # Facts about the run itself for results.json: suite version and commit, the command
    # line (credentials redacted), ISO 8601 start and end, the selection and the shard.
    meta: dict[str, Any] = field(default_factory=dict)
    summary: Summary = field(init=False)

    def __post_init__(self) -> None:
        self.summary = summarise(self.results, self.labels, [b.label for b in self.brokers], _rule_titles(), self.peers)
        self._by_id = {r.id: r for r in self.results}

    def cell(self, cell_id: str) -> CellResult:
        return self._by_id[cell_id]

    def cells(self, ids: Iterable[str]) -> list[CellResult]:
        return [self._by_id[i] for i in ids]

    def count(self, status: str) -> int:
        return self.summary.status_counts.get(Status(status), 0)

    @property
    def broker(self) -> str:
        """What the console's last line says the run was on."""
        return ", ".join(b.shown for b in self.brokers)

    @property
    def tls(self) -> bool:
        """The run was over TLS (on every broker of it)."""
        return bool(self.brokers) and all(b.tls for b in self.brokers)

    @property
    def ok(self) -> bool:
        return not self.summary.problems


def combine_runs(runs: list["RunResult"]) -> "RunResult":
    """One result for a run on several brokers (the broker axis): every broker's cells, each
    id suffixed with `@broker` so ids stay unique; one broker's run is returned as it is."""
    from dataclasses import replace

    if len(runs) == 1:
        return runs[0]
    first = runs[0]
    cells = [replace(c, id=f"{c.id}@{c.broker}") for r in runs for c in r.results]
    peers = dict(first.peers)
    for r in runs[1:]:
        for name, status in r.peers.items():
            if name not in peers or (peers[name].unavailable and not status.unavailable):
                peers[name] = status
    meta = dict(first.meta)
    meta["finished_at"] = runs[-1].meta.get("finished_at")
    meta["cells_s"] = round(sum(float(r.meta.get("cells_s") or 0) for r in runs), 1)
    aborts = [f"{r.broker}: {r.meta['aborted']}" for r in runs if r.meta.get("aborted")]
    meta["aborted"] = "; ".join(aborts) or None
    return RunResult(cells, peers, list(first.labels), [b for r in runs for b in r.brokers],
                     sum(r.duration_s for r in runs), first.started_at, first.log_dir, first.vhost, meta)


def mutant_coverage(hello: dict[str, Any], catalogue_mutants: Iterable[str]) -> dict[str, Any]:
    """Which catalogue mutants a peer offers: a peer outside this suite may offer none."""
    known = list(catalogue_mutants)
    offered = [m for m in known if m in set(hello.get("mutants") or [])]
    return {"offered": len(offered), "of": len(known), "missing": [m for m in known if m not in offered]}


def _rule_titles() -> dict[str, str]:
    from ..spec.catalogue import rules  # the one harness module the model may use

    return rules()
