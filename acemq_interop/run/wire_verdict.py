"""A cell's failures weighed against the broker's transcript, in a declared order.

The engine (engine.py) runs a cell's steps and collects what its checks found; the wire
shows what each peer really published and when. Here, once the cell has ended:

1. `judge_messages` (every judged cell): each message a peer published, against the clauses
   one message can show; a call whose request went out past its own timeout.
2. `weigh_failures` (a FAIL): what the wire says of each failure, in this order: a reply that
   never came to a request delivered and left unanswered (RR-4.1); a count short because the
   other side published less; replies routed nowhere because the requester named no queue of
   its own (RR-6.1); consequences confirmed or refuted; each failed call's path; one entry per
   defect; the earliest deviation first.

A transcript with a hole cannot refute an attribution or show why a call failed: there the
checks' own verdicts stand, and the cell says its transcript is incomplete.
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from ..results.model import PROBE, CellResult, Failure, NotEvaluated, Status
from ..spec import catalogue as spec
from ..spec.scenarios import SIDE_OBJECTS
from .state import CellState
from .wire_checks import (CallFinding, diagnose_call, direct_replies, extra_publishes_by_others, first_reply_after, judge, message_breaks, publisher,
                          published_by, publishes_to, reply_queues_of, requests_left_unanswered, unanswered_request,
                          unroutable_replies)


def _lead(result: CellResult) -> None:
    """The cell's first failure, as its summary fields say it (after its failures changed)."""
    first = result.failures[0]
    result.rule, result.message, result.seen_as = first.clause, first.message, first.seen_as
    result.expected, result.observed = first.expected, first.observed


def _roles_of(state: CellState, label: str) -> list[str]:
    """The roles the peer spec `label` plays in the cell (a shared role's members included)."""
    return [r for r, who in state.cell.roles.items()
            for s in (who if isinstance(who, tuple) else (who,) if who is not None else ()) if s.label == label]


def _now_failing(result: CellResult, records: list[dict[str, Any]]) -> None:
    """A judged cell that passed until the wire showed a failure: a FAIL now, keeping its
    transcript (the evidence)."""
    if result.failures and result.status == Status.PASS:
        result.status = Status.FAIL
        _lead(result)
        if result.transcript is None:
            result.transcript = records


def judge_messages(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """What every message of a judged (PASS or FAIL) cell shows on its own."""
    _message_breaks(state, result, records)
    _calls_sent_past_timeout(state, result, records)
    _direct_reply_to_callers(state, result, records)


def weigh_failures(state: CellState, result: CellResult, records: list[dict[str, Any]] | None) -> None:
    """A FAIL's failures held to the wire (`records`: None when the run keeps no transcripts)."""
    if result.transcript_gap:
        return
    for weigh in (_unanswered_probe_requests, _unanswered_gathers, _short_upstream, _replies_to_no_queue, _direct_replies):
        if records is not None and result.status == Status.FAIL:
            weigh(state, result, records)
    if result.status != Status.FAIL:
        return
    _check_on_wire(state, result)
    _diagnose_calls(state, result, records)
    if records is not None and result.status == Status.FAIL:
        # After the calls are diagnosed: what they named stands, and these only weigh the rest.
        _nothing_to_handle(state, result, records)
        _replies_never_sent(state, result, records)
    if result.status != Status.FAIL:
        return
    _one_entry_per_defect(result)
    _root_first(state, result)


def _message_breaks(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """Every message each peer of the cell published, against the clauses one message can
    show (both addresses, equal, not empty; spec header types; no B, u or i; a reply's
    content type, responseMessageId, a failure's empty body), charged to its publisher.
    A peer replaying an older profile is not judged here: the profile is history on purpose."""

    specs = state.cell.specs()
    labels_of: dict[str, set[str]] = {}
    for s in specs:
        labels_of.setdefault(s.name, set()).add(s.label)
    # One peer process serving two specs of the cell (python and python@0.3.0) may carry both
    # on one connection: the transcript cannot tell which published, so neither is judged.
    judged = {s.label for s in specs if s.profile == "current" and len(labels_of[s.name]) == 1}
    targets = reply_queues_of(result.trace) | {
        str(v["name"]) for step in state.cell.scenario.steps
        if step.kind == "probe_inbox" and isinstance(v := state.variables.get(step.bound_name), dict) and v.get("name")}
    breaks = message_breaks(records, judged, targets, _id_clauses(state))
    if not breaks:
        return
    seen = {(f.clause, f.peer) for f in result.failures}
    for wire in breaks:
        if (wire.clause, wire.peer) in seen:
            continue  # the scenario's own check already named it
        seen.add((wire.clause, wire.peer))
        clause = spec.catalogue().clauses.get(wire.clause)
        roles = _roles_of(state, wire.peer)
        # One spec may play both roles (the diagonal): the role keeping the clause's side.
        keeps = set(SIDE_OBJECTS.get(clause.side if clause else "", ()))
        role = next((r for r in roles if state.cell.scenario.opens.get(r, frozenset()) & keeps),
                    roles[0] if roles else None)
        result.failures.append(Failure(
            clause=wire.clause, rule=spec.rule_of(wire.clause), side=clause.side if clause else "either", role=role,
            peer=wire.peer, check=f"the broker's transcript, message #{wire.n}", message=wire.message,
            expected=wire.expected, observed=wire.observed, wire=f"transcript #{wire.n}"))
    _now_failing(result, records)


def _unanswered_probe_requests(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """A reply the probe waited for that never came, held to the wire: the probe's request
    naming that address was delivered to a responder of the cell, which published nothing to
    it, nor anything else. The request named its address in both places, so no reading of
    one explains it; where the responder's own report does not either (it called the request
    unanswerable; its body is not JSON: RR-19.2's own case; it ran a failing handler: RR-10.1),
    that is one defect, whatever the scenario's request was about: no reply was published
    (RR-4.1), charged to that responder with the transcript's lines, seen directly. Scenarios
    whose request names one address only presume it (`assumes: [RR-4.1]`): a responder shown
    here to answer nothing is named RR-4.1 there too, one that answers both-address requests
    is judged on the reading the scenario is about."""


    changed = False
    for index, failure in enumerate(result.failures):
        step = _step_of(state, failure.check)
        if step is None or step.kind != "probe_get" or failure.wire or not isinstance(step.args, dict) \
                or step.args.get("absent") or not isinstance(failure.observed, int):
            continue
        queue = state.queue_name(str(step.args["queue"]))
        found = unanswered_request(records, queue)
        if found is None:
            continue
        request, delivered, responder = found
        clause = _why_unanswered(state, responder, request)
        if clause is None:
            continue
        obliged = spec.catalogue().clauses.get(clause)
        roles = _roles_of(state, responder)
        text = (f"the probe's request #{request['n']} was delivered to {responder} (#{delivered['n']}), which published "
                f"no reply to {queue} (nor anywhere) and never had it redelivered")
        result.failures[index] = replace(
            failure, clause=clause, rule=spec.rule_of(clause), side=obliged.side if obliged else "either",
            role=roles[0] if roles else failure.role, peer=responder, suspects=(), seen_as=None,
            wire=f"transcript #{request['n']}, #{delivered['n']}: {text}", message=f"{failure.message}; the wire shows why: {text}")
        state.note("wire", unanswered=request["n"], clause=clause, peer=responder)
        changed = True
    if changed:
        _lead(result)


# What a failure for a part a peer lacks observes (run/steps.py): never the other side's doing.
_LACKING = ("lacking", "declared lacking")
# The steps that read what a responder did with a request it was given.
_HANDLING_STEPS = ("wait_event", "probe_get", "probe_count")


def _nothing_to_handle(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """A responder charged with what it did with a request (its events, its dead-letter) where
    the transcript shows nothing ever routed to the queue it consumes: no one gave it a request
    (a caller that never published: NestJS's, refused its own declaration of the queue). The
    failure is not evaluated, with the wire's word, never charged to a responder that had
    nothing to do."""

    kept, void = [], []
    for failure in result.failures:
        step = _step_of(state, failure.check)
        queues = _queues_of(state, failure.role)
        if failure.side != "responder" or failure.peer is None or failure.wire or step is None \
                or step.kind not in _HANDLING_STEPS or not queues or _anything_routed(records, queues):
            kept.append(failure)
            continue
        void.append(failure)
        why = (f"needs a request routed to {', '.join(sorted(queues))}: the transcript shows none in the cell, so "
               f"{failure.peer} had nothing to handle")
        result.not_evaluated.append(NotEvaluated(failure.clause, failure.check, why))
        state.note("wire", nothing_to_handle=failure.peer, clause=failure.clause)
    if not void:
        return
    result.failures = kept
    if kept:
        _lead(result)
    else:
        result.status, result.rule, result.message, result.seen_as, result.expected, result.observed = (
            Status.ERROR, None, "every failure of the cell charged a responder that was never given a request, and "
                                "nothing else broke: the scenario cannot judge this cell", None, None, None)


def _anything_routed(records: list[dict[str, Any]], queues: set[str]) -> bool:
    """Whether any message, whoever published it (the probe too), reached one of `queues`."""
    return any((r.get("event") == "publish" and queues & set(r.get("routed_queues") or []))
               or (r.get("event") == "deliver" and r.get("queue") in queues) for r in records)


def _queues_of(state: CellState, role: str | None) -> set[str]:
    """The request queues the scenario's responder steps of `role` consume, as named in the cell;
    empty when one is named per started responder (`q-${index}`): then nothing is said."""
    queues = set()
    for st in state.cell.scenario.steps:
        if st.kind == "responder" and isinstance(st.args, dict) and st.args.get("role") == role and st.args.get("queue"):
            if "${" in str(st.args["queue"]):
                return set()
            queues.add(state.queue_name(str(st.args["queue"])))
    return queues


def _replies_never_sent(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """A requester charged with counting a reply (RR-8: Unmatched, its event) that never
    existed: the transcript shows its request delivered to a responder that published nothing
    at all after it. The defect is that responder's, no reply published (RR-4.1), charged to
    it with the transcript's lines and seen as the requester's clause."""

    changed = False
    for index, failure in enumerate(result.failures):
        if failure.side != "requester" or failure.peer is None or failure.wire or failure.rule != "RR-8" \
                or _step_of(state, failure.check) is None or failure.observed in _LACKING:
            continue  # a part the requester lacks is its own, whatever the responder did
        unanswered = requests_left_unanswered(records, failure.peer)
        if not unanswered or published_by(records, unanswered[0][2], "responder"):
            continue  # a responder that answered nothing at all, and only then
        request, delivered, responder = unanswered[0]
        roles = _roles_of(state, responder)
        text = (f"request #{request['n']} of {failure.peer} was delivered to {responder} (#{delivered['n']}), which "
                f"published nothing: there was no reply to count")
        # Where the cell already names that responder's defect (a call diagnosed on the wire:
        # the reading that found no address, RR-3.x), the uncounted reply is that same defect.
        named = next((f.clause for f in result.failures if f.peer == responder and f is not failure), "RR-4.1")
        result.failures[index] = replace(
            failure, clause=named, rule=spec.rule_of(named), side="responder", role=roles[0] if roles else failure.role,
            peer=responder, suspects=(), seen_as=failure.seen_as or failure.clause,
            wire=f"transcript #{request['n']}, #{delivered['n']}: {text}", message=f"{failure.message}; the wire shows why: {text}")
        state.note("wire", never_sent=request["n"], peer=responder)
        changed = True
    if changed:
        _lead(result)


def _short_upstream(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """A queue that held fewer messages than a check counted on, charged to one side, where
    the transcript shows the other side published fewer than that to it by then (a requester
    whose calls go out one at a time leaves a request queue short): the count says nothing of
    the side charged. The failure is not evaluated, with the wire's figures, never charged to
    a side that did what the spec asks with what it was given."""

    kept: list[Failure] = []
    for failure in result.failures:
        step = _step_of(state, failure.check)
        wanted = step.args.get("messages") if step is not None and step.kind == "probe_count" and isinstance(step.args, dict) else None
        obliged = spec.catalogue().clauses.get(failure.clause)
        t = state.trace[failure.at]["t"] if failure.at is not None and 0 <= failure.at < len(state.trace) else None
        if not isinstance(wanted, int) or obliged is None or t is None:
            kept.append(failure)
            continue
        queue = state.queue_name(str(step.args["queue"]))
        sent = publishes_to(records, queue, until=t)
        sides = {side for _, side in sent.values()}
        charged = "requester" if obliged.side in ("requester", "gatherer") else obliged.side
        if len(sent) >= wanted or not sides or charged in sides:
            kept.append(failure)
            continue
        who = ", ".join(sorted({label for label, _ in sent.values()}))
        why = (f"needs {wanted} message(s) published to {queue}: the transcript shows {len(sent)} by then "
               f"({', '.join(f'#{n}' for n in sorted(sent)[:8])}, by {who}), so the count says nothing of the {charged}")
        result.not_evaluated.append(NotEvaluated(failure.clause, failure.check, why))
        state.note("wire", short_upstream=queue, published=len(sent), wanted=wanted)
    if len(kept) == len(result.failures):
        return
    result.failures = kept
    if kept:
        _lead(result)
    else:
        result.status, result.rule, result.message, result.seen_as, result.expected, result.observed = (
            Status.ERROR, None, ("every failure of the cell was a count short upstream, and nothing else broke: "
                                 "the scenario cannot judge this cell"), None, None, None)


def _replies_to_no_queue(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """A requester whose requests name an address that is no queue of its own (direct
    reply-to's pseudo-queue; none it declared when opened), so that the broker routes every
    reply to it nowhere: it deviated first (RR-6.1: one reply queue, declared when opened,
    named as the address). A responder that then did what RR-14 says with a reply the broker
    could not route (rolled Answered back, ran again, dead-lettered) is not charged for the
    counts the scenario expected of a reply that was routed; what the wire shows of its own
    messages still stands."""


    for role, who in state.cell.roles.items():
        if role not in ("requester", "gatherer") or who is None or isinstance(who, tuple):
            continue
        peer = state.peer_of(role)[0]
        declared = {str(n["answer"]["reply_queue"]) for n in state.trace if n.get("step") == "requester.open"
                    and n.get("peer") == who.name and isinstance(n.get("answer"), dict) and n["answer"].get("reply_queue")}
        found = unroutable_replies(records, declared)
        if peer is None or not found:
            continue
        address, lines = found
        text = (f"the requests named {address}, no queue the requester declared, and the broker routed the replies "
                f"to it nowhere ({', '.join(f'#{n}' for n in lines[:8])})")
        kept: list[Failure] = []
        for failure in result.failures:
            if failure.side == "responder" and not failure.wire and not failure.direct:
                result.not_evaluated.append(NotEvaluated(failure.clause, failure.check, f"needs replies the broker can route: {text}"))
            elif failure.clause == "RR-6.2" and failure.peer == peer:
                kept.append(replace(failure, clause="RR-6.1", rule=spec.rule_of("RR-6.1"), seen_as="RR-6.2", wire=text,
                                     message=f"{failure.message}; the wire shows why: {text}"))
            else:
                kept.append(failure)
        if not any(f.clause == "RR-6.1" and f.peer == peer for f in kept):
            obliged = spec.catalogue().clauses.get("RR-6.1")
            kept.insert(0, Failure(clause="RR-6.1", rule=spec.rule_of("RR-6.1"), side=obliged.side if obliged else "requester",
                                   role=role, peer=peer, check="its requests on the wire", message=text, wire=text,
                                   expected="a reply queue of its own, declared when opened", observed=address))
        state.note("wire", no_reply_queue=address, peer=peer)
        result.failures = kept
        _lead(result)


def _unanswered_gathers(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """A gatherer's check of what its gather got (its outcome, its replies), where the wire
    shows every copy it published delivered to a responder of the cell and no reply published
    by any of them: the gather had nothing to resolve with, whatever the gatherer does, and the
    check says nothing of it (what kept the responders silent is judged where it shows)."""
    gathers = {st.bound_name: st for st in state.cell.scenario.steps if st.kind == "gather" and st.bound_name}
    kept: list[Failure] = []
    for failure in result.failures:
        head = failure.check.split(": ", 1)[1].split(".")[0].split(" ")[0] if ": " in failure.check else ""
        answer = state.variables.get(head) if head in gathers else None
        request_id = answer.get("request_id") if isinstance(answer, dict) else None
        why = _copies_unanswered(records, request_id) if failure.side == "gatherer" and request_id else None
        if why is None:
            kept.append(failure)
            continue
        result.not_evaluated.append(NotEvaluated(failure.clause, failure.check, f"needs replies to {head}: {why}"))
    if len(kept) == len(result.failures):
        return
    result.failures = kept
    if kept:
        _lead(result)
    else:
        result.status, result.rule, result.message, result.seen_as, result.expected, result.observed = (
            Status.ERROR, None, ("every failure of the cell read replies no responder published, and nothing else broke: "
                                 "the scenario cannot judge this cell"), None, None, None)


def _copies_unanswered(records: list[dict[str, Any]], request_id: str) -> str | None:
    """Why a gather got nothing, from the wire: each copy carrying `request_id` delivered to a
    named responder, and no responder publishing anything after the first delivery; else None."""
    copies = [r for r in records if r.get("event") == "publish" and (r.get("properties") or {}).get("message_id") == request_id
              and not str(r.get("who") or "").endswith(" (responder)")]
    delivered = [r for r in records if r.get("event") == "deliver" and (r.get("properties") or {}).get("message_id") == request_id
                 and str(r.get("who") or "").endswith(" (responder)")]
    if not copies or not delivered or len(delivered) < len(copies):
        return None
    first = min(r["n"] for r in delivered)
    if any(r.get("event") == "publish" and r["n"] > first and str(r.get("who") or "").endswith(" (responder)") for r in records):
        return None
    copied = ", ".join("#" + str(r["n"]) for r in copies[:6])
    taken = ", ".join("#" + str(r["n"]) for r in delivered[:6])
    takers = ", ".join(sorted({str(r["who"]).rsplit(" (", 1)[0] for r in delivered}))
    return f"its copies ({copied}) were delivered to {takers} ({taken}), and no responder published anything after"


# The clauses of a reply the broker returns (RR-14's retries, RR-15.2's roll-back): a reply to
# direct reply-to is never one of those, it is sent once (RR-14.5).
_RETURNED_REPLY_CLAUSES = frozenset({"RR-14.1", "RR-14.2", "RR-14.3", "RR-14.4", "RR-15.2"})
# What a responder that took the broker's return of a direct reply-to reply for a failure
# shows through: its retries and the counts they undo.
_RETURN_TAKEN_CLAUSES = _RETURNED_REPLY_CLAUSES | {"RR-15.1", "RR-16.1"}


def _direct_replies(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """Replies a responder of the cell sent to direct reply-to addresses (`amq.rabbitmq.reply-to.
    <token>`), held to RR-14.5: more than one to one request is the responder taking the
    broker's return for a failure, and its failures that show through retries and undone
    counts are that, RR-14.5, seen as their own clauses (any other, a retried failure reply's
    RR-11.2 among them, is left to its scenario and presumptions); one each is the spec's
    at-most-once, and a check that presumed a returned reply (a retry, a roll-back) says
    nothing of it."""

    by_responder = direct_replies(records)
    if not by_responder:
        return
    kept: list[Failure] = []
    for failure in result.failures:
        sent = by_responder.get(failure.peer or "")
        if sent is None or failure.side != "responder" or failure.wire or failure.direct:
            kept.append(failure)
            continue
        repeated = {cid: ns for cid, ns in sent.items() if len(ns) > 1}
        if repeated and failure.clause in _RETURN_TAKEN_CLAUSES:
            cid, lines = next(iter(repeated.items()))
            text = (f"{failure.peer} replied {len(lines)} times ({', '.join(f'#{n}' for n in lines[:6])}) to direct "
                    f"reply-to for request {cid!r}: a reply there is sent once, whatever the broker returns")
            kept.append(replace(failure, clause="RR-14.5", rule=spec.rule_of("RR-14.5"), seen_as=failure.clause,
                                wire=f"transcript: {text}", message=f"{failure.message}; the wire shows why: {text}"))
        elif not repeated and failure.clause in _RETURNED_REPLY_CLAUSES:
            lines = [n for ns in sent.values() for n in ns]
            result.not_evaluated.append(NotEvaluated(
                failure.clause, failure.check, f"needs a reply the broker returns: {failure.peer}'s replies "
                f"({', '.join(f'#{n}' for n in lines[:6])}) went to direct reply-to, sent once each as RR-14.5 says"))
        else:
            kept.append(failure)
    if kept == result.failures:
        return
    result.failures = kept
    if kept:
        _lead(result)
    else:
        result.status, result.rule, result.message, result.seen_as, result.expected, result.observed = (
            Status.PASS, None, None, None, None, None)


def _why_unanswered(state: CellState, responder: str, request: dict[str, Any]) -> str | None:
    """The clause a responder broke by publishing no reply to a request delivered to it, from
    its own report of that request; None where the scenario's own clause explains it better."""

    try:
        json.loads(request.get("body") or "")
    except ValueError:
        return None  # not JSON: RR-19.2 says what to answer, the scenario's clause stands
    message_id = (request.get("properties") or {}).get("message_id")
    spec_of = next((s for s in state.cell.specs() if s.label == responder), None)
    peer = state.ctx.peers.get(spec_of.name) if spec_of is not None else None
    if peer is None:
        return None
    events = peer.events_since(state.event_marks.get(peer.name, 0), lambda e: e.get("message_id") == message_id)
    kinds = {e.get("event") for e in events}
    if "unanswerable" in kinds:
        return None  # it found no address: which reading failed is the scenario's clause
    if "handled" in kinds:
        failing = any(isinstance(st.args, dict) and (st.args.get("behavior") or {}).get("reply") == "fail"
                      for st in state.cell.scenario.steps if st.kind == "responder")
        return "RR-10.1" if failing else "RR-4.1"
    if peer.events_since(0, lambda e: e.get("event") != "connection_lost"):
        return None  # a peer with hooks that did not run its handler: the scenario's clause stands
    return "RR-4.1"  # no hooks: what the wire shows is all there is


def _step_of(state: CellState, check: str) -> Any:
    """The scenario step a failure's check names (`step 7 wait_event: ...`), or None."""
    head = check.split(" ", 2)
    if len(head) < 2 or head[0] != "step" or not head[1].isdigit():
        return None
    index = int(head[1]) - 1
    return state.cell.scenario.steps[index] if 0 <= index < len(state.cell.scenario.steps) else None


DIRECT_REPLY_TO = "amq.rabbitmq.reply-to"


def _direct_reply_to_callers(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """A requester of the cell that named no reply queue when opened and whose calls went out
    naming direct reply-to (`amq.rabbitmq.reply-to`, the broker's pseudo-queue) as their address
    has no reply queue of its own: RR-6.1, charged to it once, citing its first such request.
    (A reply to such an address is the responder's to send at most once, RR-14.5.)"""
    for name, call in state.calls.items():
        step = next((st for st in state.cell.scenario.steps if st.bound_name == name), None)
        owner = state.variables.get(str(step.args.get("requester"))) if step is not None and isinstance(step.args, dict) else None
        role = state.cell.scenario.name_roles.get(str(step.args.get("requester"))) if step is not None else None
        peer = state.peer_of(role)[0] if role else None
        if peer is None or not isinstance(owner, dict) or owner.get("reply_queue"):
            continue
        if any(f.clause == "RR-6.1" and f.peer == peer for f in result.failures):
            continue
        request = next((r for r in records if r.get("event") == "publish" and r.get("who") != PROBE
                        and r.get("exchange") == call["exchange"] and call["routing_key"] in (r.get("routing_keys") or [])
                        and float(r.get("t", 0)) >= call["t"] - 0.05
                        and str((r.get("properties") or {}).get("reply_to") or "").startswith(DIRECT_REPLY_TO)), None)
        if request is None:
            continue
        obliged = spec.catalogue().clauses.get("RR-6.1")
        text = (f"request #{request['n']} names {request['properties']['reply_to']} (direct reply-to, the broker's "
                f"pseudo-queue) as its reply address, and the requester named no reply queue when opened")
        result.failures.append(Failure(
            clause="RR-6.1", rule=spec.rule_of("RR-6.1"), side=obliged.side if obliged else "requester", role=role, peer=peer,
            check=f"{name}: its request on the wire", message=text, wire=f"transcript #{request['n']}: {text}",
            expected="a reply queue of its own, declared when opened", observed=request["properties"]["reply_to"]))
    _now_failing(result, records)


def _calls_sent_past_timeout(state: CellState, result: CellResult, records: list[dict[str, Any]]) -> None:
    """A request whose publish the transcript shows long after its call was made, past the
    call's own timeout (a requester whose calls wait for one another), and which still ended
    with anything but the timeout outcome: it was not bounded by its timeout (RR-9.6), charged
    to its requester with the wire's times. The tolerance (half the timeout, at least 2 s)
    keeps a loaded machine's scheduling out of it, and so does the binding's own measure of
    the call (an `elapsed_ms` within the timeout: the delay came before the binding had it)."""

    for name, call in state.calls.items():
        answer = state.variables.get(name)
        step = next((st for st in state.cell.scenario.steps if st.bound_name == name), None)
        timeout_ms = step.args.get("timeout_ms") if step is not None and isinstance(step.args, dict) else None
        if not isinstance(answer, dict) or answer.get("outcome") in (None, "timeout", "refused") or not isinstance(timeout_ms, int):
            continue
        role = state.cell.scenario.name_roles.get(str(step.args.get("requester")))
        peer, _ = state.peer_of(role)
        found = first_reply_after(records, peer, call["exchange"], call["routing_key"], call["t"],
                                  answer.get("request_id")) if peer else None
        if found is None:
            continue
        delay = float(found[0].get("t", 0)) - call["t"]
        elapsed = answer.get("elapsed_ms")
        if delay <= timeout_ms / 1000 + max(2.0, timeout_ms / 2000):
            continue
        if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and elapsed <= timeout_ms:
            continue  # the binding itself measured the call within its timeout: the delay was before it had the call
        if any(f.clause == "RR-9.6" and f.peer == peer for f in result.failures):
            continue
        clause = spec.catalogue().clauses.get("RR-9.6")
        result.failures.append(Failure(
            clause="RR-9.6", rule=spec.rule_of("RR-9.6"), side=clause.side if clause else "requester", role=role, peer=peer,
            check=f"{name}: its request on the wire", wire=f"transcript #{found[0]['n']}",
            message=(f"{name} (timeout {timeout_ms} ms) was published {delay:.1f}s after the call was made (#{found[0]['n']}) "
                     f"and ended with {answer.get('outcome')!r}, not with its timeout"),
            expected=f"ends with the timeout outcome by {timeout_ms} ms", observed=f"published after {delay * 1000:.0f} ms"))
    _now_failing(result, records)


def _id_clauses(state: CellState) -> dict[str, str]:
    """Per peer label, the clause its requests break when they carry no message_id: RR-8.1
    for a peer that only made requests in the cell, SG-1.1 for one that only gathered (one
    that did both is not judged on it: the transcript cannot tell a copy from a request)."""
    kinds: dict[str, set[str]] = {}
    for step in state.cell.scenario.steps:
        if step.kind in ("request", "gather") and isinstance(step.args, dict):
            role = state.cell.scenario.name_roles.get(str(step.args.get("requester")))
            peer, _ = state.peer_of(role)
            if peer is not None:
                kinds.setdefault(peer, set()).add(step.kind)
    return {peer: {"request": "RR-8.1", "gather": "SG-1.1"}[next(iter(k))] for peer, k in kinds.items() if len(k) == 1}


def _check_on_wire(state: CellState, result: CellResult) -> None:
    """Each attribution made through a consequence, held to the broker's transcript: it
    stands where the wire agrees, and where the wire refutes it the failure is the check's
    own clause, charged to the side that check judges, citing the transcript lines."""


    changed = False
    failures = []
    for failure in result.failures:
        if failure.clause == "SG-2.2" and failure.peer and not failure.wire:
            refuted = extra_publishes_by_others(result.transcript, failure.peer)
            if refuted is not None:  # the wire shows another peer's messages: theirs is the break
                changed = True
                state.note("wire", refutes=failure.clause, peer=failure.peer, text=refuted.text)
                continue
        finding = judge(failure.clause, result.transcript, result.trace) if failure.seen_as else None
        if finding is None and failure.clause == "SG-4.1" and not failure.wire:
            # The gatherer finds a gather by the reply's responseMessageId: where the wire shows
            # responders echoing a wrong value (or none), the demultiplexing had nothing right to
            # go by, and the break is theirs (SG-3.1), not the gatherer's.
            wrong = judge("SG-3.1", result.transcript, result.trace)
            if wrong is not None and wrong.confirmed:
                numbered = {r.get("n"): r for r in result.transcript or []}
                culprits = sorted({p[0] for n in wrong.lines if (p := publisher(numbered.get(n) or {})) is not None})
                if culprits:
                    changed = True
                    own = spec.catalogue().clauses.get("SG-3.1")
                    for culprit in culprits:
                        failures.append(replace(failure, clause="SG-3.1", rule=spec.rule_of("SG-3.1"),
                                                side=own.side if own else "responder", peer=culprit, suspects=(),
                                                role=next(iter(_roles_of(state, culprit)), failure.role),
                                                seen_as="SG-4.1", wire=f"refutes SG-4.1: {wrong.text}",
                                                message=f"{failure.message}; not SG-4.1: {wrong.text}"))
                    state.note("wire", refutes="SG-4.1", by=culprits, text=wrong.text)
                    continue
        if finding is None:
            failures.append(failure)
            continue
        changed = True
        if finding.confirmed:
            # The wire names who published the breaking messages: one peer is that peer, even
            # where the check alone could only list the role's suspects.
            numbered = {r.get("n"): r for r in result.transcript or []}
            lines_of: dict[str, list[int]] = {}
            for n in finding.lines:
                if (p := publisher(numbered.get(n) or {})) is not None:
                    lines_of.setdefault(p[0], []).append(n)
            if failure.peer is None and lines_of:
                # A shared role (subscribers): each publisher the wire names is charged with its
                # own messages, and no member the wire clears is.
                for peer, lines in sorted(lines_of.items()):
                    failures.append(replace(failure, peer=peer, suspects=(),
                                            wire=f"confirmed: {finding.text}; {peer} published {', '.join(f'#{n}' for n in lines)}"))
            else:
                failures.append(replace(failure, wire=f"confirmed: {finding.text}"))
            continue
        own = spec.catalogue().clauses.get(failure.seen_as)
        peer, suspects = state.peer_of(failure.seen_by)
        failures.append(replace(failure, clause=str(failure.seen_as), rule=spec.rule_of(str(failure.seen_as)),
                                side=own.side if own else "either", role=failure.seen_by, peer=peer, suspects=suspects,
                                seen_as=None, wire=f"refutes {failure.clause}: {finding.text}",
                                message=f"{failure.message}; not {failure.clause}: {finding.text}"))
    if changed and not failures:  # every failure refuted by the wire: nothing the cell's peers broke
        result.failures, result.status, result.rule, result.message = [], Status.ERROR, None, (
            "every failure of the cell was refuted by the broker's transcript, and nothing else broke: "
            "the scenario cannot judge this cell")
        return
    if changed:
        result.failures = failures
        first = failures[0]
        result.rule, result.message, result.seen_as = first.clause, first.message, first.seen_as


def _diagnose_calls(state: CellState, result: CellResult, records: list[dict[str, Any]] | None = None) -> None:
    """Each failed check of a request's outcome, held to the request's path on the wire: the
    first break there (no message_id, no address, a responder that sent no reply or one with
    another correlation_id or without acemq-error) is the defect, charged to whoever made it,
    citing the transcript; the check's own clause is what it was seen as. Where the wire shows
    the request answered right, the requester's own clause stands."""


    if not result.transcript and not state.call_checks:
        return
    # The cell's transcript: an empty one (the tracer ran and nothing was published) is evidence too.
    records = records if records is not None else result.transcript
    changed = False
    void: set[int] = set()
    for index, name in sorted(state.call_checks.items()):
        if index >= len(result.failures) or records is None:
            continue
        failure, call = result.failures[index], state.calls.get(name)
        if call is None or failure.wire or failure.peer is None or failure.side not in ("requester", "either"):
            continue
        late = _reply_after_timeout(state, name, failure.peer, call, records)
        if late is not None:  # the call ended as it had to: no reply was there in time
            result.not_evaluated.append(NotEvaluated(failure.clause, failure.check, late))
            state.note("wire", void=name, why=late)
            void.add(index)
            changed = True
            continue
        answer = state.variables.get(name)
        if isinstance(answer, dict) and answer.get("outcome") == "timeout" and _published_nothing(state, records, failure.peer):
            # Nothing of the requester ever reached the broker (NestJS's caller: the broker refused
            # its own declaration of the request queue), and the call waited out its timeout.
            finding = CallFinding("RR-13.2", failure.peer, (), f"no request of {failure.peer} reached the broker in the cell, "
                                  "and its call ended by its timeout, not by a refusal")
        else:
            finding = diagnose_call(records, failure.peer, call["exchange"], call["routing_key"], call["t"],
                                    failure_expected=failure.clause == "RR-10.3",
                                    message_id=answer.get("request_id") if isinstance(answer, dict) else None)
        if finding is None or (finding.clause, finding.peer) == (failure.clause, failure.peer):
            continue
        clause = spec.catalogue().clauses.get(finding.clause)
        roles = _roles_of(state, finding.peer)
        keeps = set(SIDE_OBJECTS.get(clause.side if clause else "", ()))
        role = next((r for r in roles if state.cell.scenario.opens.get(r, frozenset()) & keeps), roles[0] if roles else None)
        result.failures[index] = replace(
            failure, clause=finding.clause, rule=spec.rule_of(finding.clause), side=clause.side if clause else "either",
            role=role, peer=finding.peer, suspects=(), seen_as=failure.seen_as or failure.clause,
            wire=f"transcript {', '.join(f'#{n}' for n in finding.lines) or '(no message of it)'}: {finding.text}",
            message=f"{failure.message}; the wire shows why: {finding.text}")
        state.note("wire", diagnosed=name, clause=finding.clause, peer=finding.peer, text=finding.text)
        changed = True
    if void:
        result.failures = [f for i, f in enumerate(result.failures) if i not in void]
        if not result.failures:
            result.status, result.rule, result.message, result.seen_as, result.expected, result.observed = (
                Status.ERROR, None, "every failure of the cell read a reply that came after its call had ended by its "
                                    "timeout, and nothing else broke: the scenario cannot judge this cell", None, None, None)
            return
    if changed:
        _lead(result)


def _published_nothing(state: CellState, records: list[dict[str, Any]], label: str) -> bool:
    """The transcript shows that the requester `label` published nothing in the cell: every
    publish names its publisher, and none is it. Where one peer process serves two specs of the
    cell (dotnet and dotnet@0.3.0 on one connection), or one spec plays two roles (its messages
    may be named by either), the transcript cannot say: False."""
    name = label.split("@", 1)[0].split("+", 1)[0]
    if sum(1 for s in state.cell.specs() if s.name == name) > 1:
        return False
    publishes = [r for r in records if r.get("event") == "publish"]
    return all(publisher(r) is not None for r in publishes) and not any(publisher(r)[0] == label for r in publishes)


def _reply_after_timeout(state: CellState, name: str, peer: str, call: dict[str, Any],
                         records: list[dict[str, Any]]) -> str | None:
    """Why a check of call `name`'s reply says nothing of its requester: the call ended by its
    timeout, not before it, and the transcript's first reply to it came after it ended (the
    scenario's reply was late, or its responder was held up by another failure); else None."""

    answer = state.variables.get(name)
    step = next((st for st in state.cell.scenario.steps if st.bound_name == name), None)
    timeout_ms = step.args.get("timeout_ms") if step is not None and isinstance(step.args, dict) else None
    if not isinstance(answer, dict) or answer.get("outcome") != "timeout" or not isinstance(timeout_ms, int):
        return None
    elapsed = answer.get("elapsed_ms")
    if not isinstance(elapsed, (int, float)) or isinstance(elapsed, bool) or elapsed < timeout_ms:
        return None  # ended early: the requester's own doing
    found = first_reply_after(records, peer, call["exchange"], call["routing_key"], call["t"], answer.get("request_id"))
    if found is None:
        return None
    request, reply = found
    ended = call["t"] + elapsed / 1000
    if reply is None:
        taken = any(r.get("event") == "deliver" and r["n"] > request["n"] and str(r.get("who") or "").endswith(" (responder)")
                    and (r.get("properties") or {}).get("message_id") == (request.get("properties") or {}).get("message_id")
                    for r in records)
        if taken:
            return None  # a responder of the cell took it and answered nothing: the call's diagnosis names it
        return (f"needs a reply to {name}: none to request #{request['n']} was ever published (the scenario's reply went "
                f"to another request), and it ended by its {timeout_ms} ms timeout at {ended:.3f}s as it had to")
    if float(reply.get("t", 0)) <= ended:
        return None
    return (f"needs a reply to {name} within its timeout: it ended by its {timeout_ms} ms timeout at {ended:.3f}s, "
            f"and the first reply to request #{request['n']} came at {reply.get('t')}s (#{reply['n']})")


def _root_first(state: CellState, result: CellResult) -> None:
    """The cell's first failure (what the console, the rerun line and the to-do list lead
    with) is the earliest deviation in the cell's timeline, not the first check in step order:
    a message the transcript shows breaking a clause deviated when it was published, a check
    when it was judged. The rest stay listed after it, in the same order of time."""

    times = {r.get("n"): float(r.get("t", 0)) for r in result.transcript or []}

    def when(failure: Failure) -> float:
        found = re.match(r"transcript #(\d+)", failure.wire or "")
        if found and int(found.group(1)) in times:
            return times[int(found.group(1))]
        if failure.at is not None and 0 <= failure.at < len(state.trace):
            return float(state.trace[failure.at].get("t", 0))
        return float("inf")

    ordered = sorted(result.failures, key=when)
    if ordered == result.failures:
        return
    result.failures = ordered
    _lead(result)


def _one_entry_per_defect(result: CellResult) -> None:
    """One entry per clause a peer broke in the cell: further checks that saw the same clause
    broken by the same peer are listed under it (`also`), not as defects of their own."""

    kept: dict[tuple[str, str | None, str | None], Failure] = {}
    for failure in result.failures:
        key = (failure.clause, failure.peer, None if failure.peer else failure.role)
        if key in kept:
            kept[key] = replace(kept[key], also=(*kept[key].also, failure.check))
        else:
            kept[key] = failure
    if len(kept) < len(result.failures):
        result.failures = list(kept.values())
