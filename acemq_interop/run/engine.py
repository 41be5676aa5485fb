"""Runs one cell: interprets a scenario's steps against peers and the probe.

Each cell has a namespace (`c0007`): every queue and exchange name it uses is prefixed with
it, and everything it opened is closed and deleted at its end, pass or fail. Every wait is
bounded; a FAIL names the rule and shows what was expected against what was observed.
"""
from __future__ import annotations

import time
from typing import Any

from . import grace, wire_verdict
from .cells import Cell, result_of
from ..core.errors import BrokerError, CheckFailed, Lacking, NotProduced, PeerError, TemplateError
from ..results.model import CellResult, NotEvaluated, Status
from ..spec.steps import STEP_KINDS, inputs_of
from .state import CellState, RunContext
from .steps import RUNS, lack_failure, unreported


def run_cell(cell: Cell, ns: str, ctx: RunContext) -> CellResult:
    if cell.scenario.broker_control and ctx.broker_control is None:
        from ..broker.control import NOT_HERE

        return result_of(cell, Status.SKIP, broker=ctx.broker, reason=NOT_HERE)
    if cell.scenario.connection_control and (why := ctx.connections_unavailable()) is not None:
        return result_of(cell, Status.SKIP, broker=ctx.broker, reason=why)
    if cell.scenario.nodes > 1 and (ctx.cluster is None or ctx.cluster.size < cell.scenario.nodes):
        from .node_steps import NOT_HERE as NEEDS_CLUSTER

        return result_of(cell, Status.SKIP, broker=ctx.broker, reason=NEEDS_CLUSTER.format(n=cell.scenario.nodes))
    state = CellState(cell=cell, ns=ns, ctx=ctx)
    grace.timer_lag()  # the meter runs from the first cell on: a cell's grace reads it
    state.variables["_t0"] = time.monotonic()
    state.variables["ns"] = ns
    for spec in cell.specs():
        state.event_marks[spec.name] = ctx.peers[spec.name].event_count()
    state.lacking = _declared_lacks(state)
    started = time.monotonic()
    result = result_of(cell, Status.PASS, broker=ctx.broker)
    suspect: str | None = None
    # Why a cell with no failure of its own cannot pass (a refused call no check judged,
    # checks left unevaluated): an ERROR, unless the broker's transcript shows a clause broken.
    unjudged: str | None = None
    try:
        try:
            for step in cell.scenario.steps:
                state.step_index = step.index
                _run_step(state, step.index, step.kind, step.args)
            if state.pending:
                raise PeerError(f"the scenario never awaited {', '.join(state.pending)}")
            if state.refused and not state.failures:
                name, error = next(iter(state.refused.items()))
                unjudged = f"peer refused the call '{name}': {error}"
            elif any(not _lack(n.needs) for n in state.not_evaluated) and not state.failures:
                # Nothing broke, yet checks went unmade: never a PASS.
                skipped = next(n for n in state.not_evaluated if not _lack(n.needs))
                unjudged = (f"{len(state.not_evaluated)} check(s) not evaluated, none failed: "
                            f"{skipped.check} ({skipped.clause}) {skipped.needs}")
            if state.failures:
                first = state.failures[0]
                result.status, result.rule, result.message = Status.FAIL, first.clause, first.message
                result.seen_as, result.expected, result.observed = first.seen_as, first.expected, first.observed
                result.failures = list(state.failures)
            result.not_evaluated = list(state.not_evaluated)
        except (PeerError, BrokerError) as exc:
            result.status, result.message = Status.ERROR, str(exc) + _after_failures(state)
        except Exception as exc:  # a harness bug must not take the other cells down
            result.status, result.message = Status.ERROR, f"harness error: {type(exc).__name__}: {exc}"
        if result.status == Status.FAIL:
            suspect = _broken_party(state)  # before the cleanup closes the probe or waits on a stopped peer
    finally:
        _cleanup(state, result)
    # After the cleanup: its round trip with every peer the cell used means each event a peer
    # wrote before answering it (a connection_lost above all) has been read.
    fault = _connection_lost(state) or suspect
    if fault is not None:
        first = (result.message or "").splitlines()[0] if result.message else ""
        if result.status == Status.FAIL:
            fault += f"\n(the cell's check {result.rule} failed after it: {result.message})"
        elif result.status == Status.ERROR and first and not first.startswith("connection lost") and "lost a connection" not in first:
            fault += f"\n(after it: {first})"
        result.status, result.message, result.rule, result.expected, result.observed = Status.ERROR, fault, None, None, None
        result.seen_as, result.failures = None, []
    if result.status in (Status.FAIL, Status.ERROR) and ctx.broker_condition is not None:
        condition = ctx.broker_condition(started)
        if condition is not None and result.status == Status.ERROR and condition.split(" since ")[0] in (result.message or ""):
            condition = None  # the ERROR already names it (the probe's blocked publish)
        if condition is not None:  # the broker, not a binding: every verdict under it is void
            what = f"the cell's check {result.rule} failed" if result.status == Status.FAIL else "the cell ended"
            first = (result.message or "").splitlines()[0] if result.message else ""
            result.message = f"{condition}\n({what} under it: {first})"
            result.status, result.rule, result.expected, result.observed, result.seen_as = Status.ERROR, None, None, None, None
            result.failures = []
    result.duration_s = time.monotonic() - started
    result.trace = state.trace
    if ctx.clocks is not None:
        ctx.clocks[cell.id] = state.clock
    if result.status == Status.ERROR:
        result.stderr = {s.name: ctx.peers[s.name].stderr_tail() for s in cell.specs() if s.name in ctx.peers}
    if ctx.tracer is not None:  # -- transcript hook (issue 13) --
        from ..amqp.transcript import attach

        judged = result.status in (Status.PASS, Status.FAIL)
        mine = [*state.probe_connections, *getattr(state.probe, "connections", ())]  # the transcript names the probe by them
        records = attach(ctx.tracer, ctx.keep_transcript, ns, state.variables["_t0"], result, read=judged, probe_connections=mine)
        result.transcript_gap = ctx.tracer.gap_during(state.variables["_t0"], time.monotonic()) or ""
        if judged:
            wire_verdict.judge_messages(state, result, records)  # what is there is judged; what is missing is not
    if result.status == Status.FAIL:
        wire_verdict.weigh_failures(state, result, records if ctx.tracer is not None else None)
    if unjudged is not None and result.status == Status.PASS:
        result.status, result.message = Status.ERROR, unjudged
        result.stderr = {s.name: ctx.peers[s.name].stderr_tail() for s in cell.specs() if s.name in ctx.peers}
        if ctx.tracer is not None and result.transcript is None:
            result.transcript = records  # an ERROR keeps its transcript, as every cell that did not pass
    return result


def _lack(needs: str) -> bool:
    """Whether a check went unevaluated for a part a peer lacks (declared, or shown by its
    answers): such checks never make a cell an ERROR."""
    return "declared:" in needs or "lacks: " in needs


def _after_failures(state: CellState) -> str:
    if not state.failures:
        return ""
    return f"\n(after {len(state.failures)} failed check(s): {', '.join(dict.fromkeys(f.clause for f in state.failures))})"


def _declared_lacks(state: CellState) -> dict[int, tuple[str, str]]:
    """The steps needing a part a peer of the cell declares it has none of (hello `lacks`)."""
    found: dict[int, tuple[str, str]] = {}
    for index, (role, part) in state.cell.scenario.part_steps.items():
        who = state.cell.roles.get(role)
        for spec in who if isinstance(who, tuple) else (who,) if who is not None else ():
            lacks = getattr(state.ctx.peers.get(spec.name), "lacks", None)
            if callable(lacks) and part in lacks():
                found[index] = (role, part)
    return found


def _run_step(state: CellState, index: int, kind: str, args: Any) -> None:
    """One step. A check that fails is recorded and the cell goes on; a step reading what an
    earlier step could not produce is not run, and its checks are "not evaluated"; a fault
    (PeerError, BrokerError) ends the cell."""
    step = STEP_KINDS[kind]
    if state.halted is not None:
        _not_run(state, index, kind, args, state.halted)
        return
    if index in state.lacking:  # nothing waits for a part the binding says it does not have
        role, part = state.lacking[index]
        _lacking_step(state, index, kind, args, role, part, f"declared: the peer of {role} lacks {part}")
        return
    if kind == "await":
        # Each call on its own: one no longer worth waiting for (unavailable: what it waited
        # on was never sent) or guarded whole is dropped; a spoiled part never stops the wait.
        names = [str(n) for n in (args if isinstance(args, list) else [args])]
        waited = []
        for name in names:
            why = f"needs {name} ({state.unavailable[name]})" if name in state.unavailable else state.guarded([name])
            if why is None:
                waited.append(name)
            else:
                _not_run(state, index, kind, name, why)
        if waited:
            RUNS[kind](state, waited)
        return
    if kind != "expect":  # an expect judges each of its checks on its own
        bound = [str(args["as"])] if isinstance(args, dict) and "as" in args else []
        why = state.blocked(inputs_of(step, args)) or state.guarded(bound)
    else:
        why = None
    if kind != "expect":
        if why is not None:
            _not_run(state, index, kind, args, why)
            return
    try:
        RUNS[kind](state, args)
    except Lacking as lack:
        # The peer's own answer shows the part missing (undeclared): judged as a declared lack.
        role = lack.role or (state.cell.scenario.name_roles.get(str(args.get("of"))) if isinstance(args, dict) else None)
        if role is None:
            raise PeerError(str(lack)) from None
        _lacking_step(state, index, kind, args, role, lack.part, f"lacks: {lack.evidence}")
    except CheckFailed as failed:
        state.fail(failed, f"step {index + 1} {kind}: {failed.message}", index)
        if isinstance(args, dict) and "as" in args:
            state.unavailable[str(args["as"])] = f"{failed.rule}: {failed.message}"
        for guarded in args.get("guards", ()) if isinstance(args, dict) else ():
            state.spoil(str(guarded), f"{failed.rule}: step {index + 1} {kind}")
    except TemplateError as exc:  # a value the scenario reads that the cell never got
        unreported(state, exc.path)
        _not_run(state, index, kind, args, f"needs {exc}")
    except NotProduced as exc:  # what a peer was to publish never came: nothing to judge it by
        state.note("not_produced", kind=kind, index=index + 1, why=str(exc))
        _not_run(state, index, kind, args, str(exc))


def _lacking_step(state: CellState, index: int, kind: str, args: Any, role: str, part: str, why: str) -> None:
    """A step needing a part the peer of `role` has none of (declared, or shown by its own
    answer): each of its checks judging that peer is the clause the part's absence breaks (a
    FAIL) or not evaluated; the name it would have bound is unavailable, and a later check
    reading it is judged the same way."""
    step = STEP_KINDS[kind]
    for sub, check in enumerate(step.checks(args)):
        clause = str(check[1].get("consequence_of") or check[1]["rule"])
        if state.cell.scenario.charges.get((index, sub)) == role:
            lack_failure(state, role, part, clause, f"step {index + 1} {kind}", evidence=why)
        else:
            state.skip(clause, f"step {index + 1} {kind}", why)
    state.note("not_evaluated", kind=kind, index=index + 1, why=why)
    if isinstance(args, dict) and "as" in args:
        state.unavailable[str(args["as"])] = why
        state.lacking_names[str(args["as"])] = (role, part)


def _not_run(state: CellState, index: int, kind: str, args: Any, why: str) -> None:
    """A step left out: its checks are not evaluated, its name is unavailable, and a call it
    was to answer (a probe reply) will not be waited for again."""
    step = STEP_KINDS[kind]
    state.note("not_evaluated", kind=kind, index=index + 1, why=why)
    for _, check in step.checks(args):
        state.skip(str(check.get("consequence_of") or check["rule"]), f"step {index + 1} {kind}", why)
    if isinstance(args, dict) and "as" in args:
        state.unavailable[str(args["as"])] = why
    if kind.startswith("probe_"):
        # What the probe did not send, a call under way may be waiting for: its outcome no
        # longer says anything about the binding, so it is not awaited again.
        for name in list(state.pending):
            state.unavailable[name] = f"the probe's step {index + 1} ({kind}) was not run: {why}"
    if kind == "await":
        for name in args if isinstance(args, list) else [args]:
            pending = state.pending.pop(str(name), None)
            if pending is not None:
                pending[1].cancel()  # its answer, when it comes, is dropped
            state.unavailable.setdefault(str(name), why)


def _connection_lost(state: CellState) -> str | None:
    """Every `connection_lost` a peer reported for the cell's requesters and responders, as
    the cell's cause: a lost connection makes the cell an ERROR whatever it came to."""
    of_cell = state.lost_connections()  # a role the cell dropped (drop_connection) was expected to lose it
    lost: list[str] = []
    for name in sorted({s.name for s in state.cell.specs()}):
        for event in state.ctx.peers[name].events_since(state.event_marks.get(name, 0), of_cell):
            side = "requester" if event.get("requester") else "responder"
            at = round(event["_at"] - state.variables["_t0"], 3) if "_at" in event else None
            state.note("connection_lost", peer=name, **{side: event[side]}, reason=event.get("reason"), at=at)
            loss = f"peer {name} {side} {event[side]}: {event.get('reason')}"
            if loss not in lost:  # a channel and its connection may both report it
                lost.append(loss)
    return "connection lost: " + "; ".join(lost) if lost else None


def _broken_party(state: CellState) -> str | None:
    """Before a FAIL stands: the probe's connection gone, or a peer that no longer answers
    (a stopped peer sends no reply, and that is not the other binding's fault)."""
    if state.probe is not None and (lost := state.probe.fault()) is not None:
        return lost
    for name in sorted({s.name for s in state.cell.specs()}):
        fault = state.ctx.peers[name].check_alive()
        if fault is not None:
            return fault
    return None


# The trace notes of a step that judges what it saw (a check, a bounded wait, a read).
_JUDGING = frozenset({"expect", "wait_counters", "wait_event", "probe_get", "probe_count", "counters", "queue_facts", "answer"})


def _judge_long_holds(state: CellState, result: CellResult) -> None:
    """A hold that lasted past its trusted time may have run out on the broker: what was
    judged between then and its release is no verdict. A failure judged before then stands,
    and so does a wait for an event that never came (a hold delays confirms, not deliveries
    or a binding's own hooks); the others are not evaluated. A cell none of whose checks was
    judged in that window keeps its verdict (a PASS whose checks all came before the hold may
    have run out is one); otherwise, with no failure left standing, the cell has no verdict
    (an ERROR, as a hold's whole point was lost)."""
    if not state.long_holds or result.status not in (Status.PASS, Status.FAIL):
        return
    if not any(since < float(note.get("t", 0)) <= until for note in state.trace if note.get("step") in _JUDGING
               for since, until, _ in state.long_holds):
        return  # every check that could see the hold was judged while it still held
    kept, voided = [], []
    for failure in result.failures:
        t = state.trace[failure.at]["t"] if failure.at is not None and 0 <= failure.at < len(state.trace) else None
        late = t is not None and any(since <= t <= until for since, until, _ in state.long_holds)
        if late and " wait_event" not in failure.check:
            voided.append(failure)
        else:
            kept.append(failure)
    why = state.long_holds[0][2]
    for failure in voided:
        result.not_evaluated.append(NotEvaluated(failure.clause, failure.check, f"judged while a hold may have run out: {why}"))
    if kept:
        if voided:
            result.failures = kept
            first = kept[0]
            result.rule, result.message, result.seen_as = first.clause, first.message, first.seen_as
            result.expected, result.observed = first.expected, first.observed
        return
    was = f"\n(the cell's check {result.rule} failed while holding: {result.message})" if result.status == Status.FAIL else ""
    result.status, result.message = Status.ERROR, f"cleanup: {why}{was}"
    result.rule, result.expected, result.observed, result.seen_as, result.failures = None, None, None, None, []


def _cleanup(state: CellState, result: CellResult) -> None:
    """Close what the cell opened and delete what it declared, whatever happened."""
    if state.ctx.cluster is not None and state.ctx.cluster.down:  # the nodes a cell's fault left down, first
        from .node_steps import restore

        try:
            state.note("node_start", nodes=restore(state), cleanup=True)
        except BrokerError as exc:
            if result.status in (Status.PASS, Status.FAIL):
                result.status, result.message = Status.ERROR, f"cleanup: starting the nodes the cell took down: {exc}"
                result.rule, result.expected, result.observed, result.seen_as, result.failures = None, None, None, None, []
    for stream in state.streams.values():  # a stream never awaited (the cell ended early): its sender ends
        if stream.thread is not None:
            stream.thread.join(60.0)
    for held in list(state.held):  # first: a held queue holds its publishers' confirms
        try:
            state.release(held)  # one that ran long is weighed below (_judge_long_holds)
        except BrokerError as exc:  # the broker did not let go: a fault, no verdict
            if result.status in (Status.PASS, Status.FAIL):
                was = f"\n(the cell's check {result.rule} failed while holding: {result.message})" if result.status == Status.FAIL else ""
                result.status, result.message = Status.ERROR, f"cleanup: releasing queue {held.queue}: {exc}{was}"
                result.rule, result.expected, result.observed, result.seen_as, result.failures = None, None, None, None, []
    _judge_long_holds(state, result)
    for opened in reversed(state.opened):
        if not opened.peer.alive:
            continue
        try:
            if opened.op == "responder.stop":
                opened.peer.stop_responder(opened.name, check=False)
            else:
                opened.peer.close_requester(opened.name, check=False)
        except PeerError as exc:
            if result.status == Status.PASS:
                result.status, result.message = Status.ERROR, f"cleanup: {exc}"
    for _, (peer, call, _, _) in state.pending.items():
        call.cancel()
    if state.probe is not None:
        state.probe.close()
    try:
        # By the names the cell declared, not by listing the vhost: a listing costs the
        # broker every queue's statistics, 24 cells at once (run --profile showed it).
        for queue in sorted(state.declared_queues):
            state.ctx.management.delete_queue(state.ctx.vhost, queue)
        for exchange in sorted(state.declared_exchanges):
            state.ctx.management.delete_exchange(state.ctx.vhost, exchange)
    except BrokerError as exc:
        if result.status == Status.PASS:
            result.status, result.message = Status.ERROR, f"cleanup: {exc}"
