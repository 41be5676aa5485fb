"""The no-loss account of a cluster cell: where each request's trail ends (pure).

A request a requester sent is, at the end of the cell, exactly one of:
- answered: its caller got its reply (outcome `reply`), once;
- unmatched: its caller gave up (a timeout, a lost connection) and its reply, coming later,
  was counted Unmatched by the requester (RR-8);
- to a gone caller: its caller's connection was lost and the reply went to the reply queue
  that died with it (the caller was told `connection_lost`: nothing is owed to it any more);
- dead-lettered: the responder dead-lettered it (its reply undeliverable after the retries,
  or its attempts spent), or it lies in `{queue}.dlq`;
- queued: it is still in the request queue (a responder that never came back);
- not sent: it never reached the broker and its caller was not told otherwise (a call that
  ended `connection_lost` or refused before any responder saw it).

Anything else is a loss, named with where its trail ends: handled by a responder and then
nothing (the responder lost it: RR-20.4), or reported sent (`timeout`: the call waited for a
reply, so its publish was made) and then found nowhere (RR-20.1: the requester reported a
publish as made that the broker never held). A request answered to its caller more than once
(a second reply counted Unmatched, or two confirmed replies) is a duplicate (RR-20.4) unless
it was handled again after a redelivery: at-least-once delivery makes that one legitimate
when the first reply went out and its acknowledgement was lost with the connection, and it is
counted apart.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

# Where a trail may end without anything being lost.
ENDS = ("answered", "unmatched", "to_gone_caller", "dead_lettered", "queued", "not_sent")
GAVE_UP = frozenset({"timeout", "connection_lost", "refused", "never_ended", "closed"})


@dataclass(frozen=True)
class Trail:
    """One request's trail, as its requester's answer, the responder's events, the
    requester's Unmatched events and the queues at the end show it."""

    request_id: str | None
    outcome: str
    attempts: tuple[int, ...] = ()  # each handling's attempt number
    replied: int = 0  # replies the responder published, confirmed and not returned
    reply_failed: int = 0
    dead_lettered: bool = False
    unmatched: int = 0  # replies to it the requester counted Unmatched
    queued_in: str | None = None  # the queue holding it at the end

    @classmethod
    def of(cls, answer: dict[str, Any], responder_events: Iterable[dict[str, Any]],
           unmatched: Iterable[dict[str, Any]], queued: dict[str, str]) -> "Trail":
        request_id = answer.get("request_id")
        outcome = str(answer.get("outcome") if answer.get("ok") else answer.get("outcome") or "refused")
        mine = [e for e in responder_events if request_id is not None and e.get("message_id") == request_id]
        return cls(
            request_id=request_id, outcome=outcome,
            attempts=tuple(int(e.get("attempt") or 0) for e in mine if e.get("event") == "handled"),
            replied=sum(1 for e in mine if e.get("event") == "replied"),
            reply_failed=sum(1 for e in mine if e.get("event") == "reply_failed"),
            dead_lettered=any(e.get("event") == "dead_lettered" for e in mine),
            unmatched=sum(1 for e in unmatched if request_id is not None and e.get("correlation_id") == request_id),
            queued_in=queued.get(str(request_id)) if request_id is not None else None)

    @property
    def redelivered(self) -> bool:
        return len(self.attempts) > 1

    def end(self) -> str:
        """Where the trail ends: one of ENDS, or `lost`."""
        if self.outcome == "reply":
            return "answered"
        if self.unmatched:
            return "unmatched"
        if self.dead_lettered or (self.queued_in or "").endswith(".dlq"):
            return "dead_lettered"
        if self.queued_in:
            return "queued"
        if self.outcome == "connection_lost" and self.replied:
            return "to_gone_caller"
        if not self.attempts and self.outcome in ("connection_lost", "refused", "closed"):
            return "not_sent"
        return "lost"

    def duplicates(self) -> int:
        """Replies beyond the first that reached its caller (or were confirmed to it)."""
        if self.outcome != "reply":
            return 0
        return max(self.unmatched, self.replied - 1, 0)

    def where(self) -> str:
        """Where the trail ends, in words (a FAIL's observed value)."""
        handled = f"handled at attempt{'s' if len(self.attempts) > 1 else ''} {', '.join(map(str, self.attempts))}" \
            if self.attempts else "never handled by a responder"
        extra = f", its reply returned {self.reply_failed} time(s) and never dead-lettered" if self.reply_failed else ""
        return f"request {self.request_id}: its call ended `{self.outcome}`, {handled}{extra}, in no queue at the end"


@dataclass
class Account:
    trails: list[Trail]
    ends: dict[str, int] = field(default_factory=dict)

    def figures(self) -> dict[str, Any]:
        return {"requests": len(self.trails), **{end: self.ends.get(end, 0) for end in (*ENDS, "lost")},
                "answered_twice": sum(1 for t in self.trails if t.duplicates() and not t.redelivered),
                "answered_again_after_redelivery": sum(1 for t in self.trails if t.duplicates() and t.redelivered)}

    def problems(self) -> list[tuple[str, str, str]]:
        """(clause, side charged: requester | responder, what the wire shows) of each loss and duplicate."""
        found = []
        for trail in self.trails:
            end = trail.end()
            if end == "lost":
                if trail.attempts or trail.reply_failed:
                    found.append(("RR-20.4", "responder", f"lost: {trail.where()}"))
                else:
                    found.append(("RR-20.1", "requester", f"lost: {trail.where()} (a `{trail.outcome}` says it was sent)"))
            elif trail.duplicates() and not trail.redelivered:
                found.append(("RR-20.4", "responder",
                              f"answered twice: request {trail.request_id} handled once (attempt "
                              f"{', '.join(map(str, trail.attempts)) or '?'}), {trail.replied} replies confirmed, "
                              f"{trail.unmatched} more counted Unmatched by its caller"))
        return found


def account(trails: list[Trail]) -> Account:
    ends: dict[str, int] = {}
    for trail in trails:
        ends[trail.end()] = ends.get(trail.end(), 0) + 1
    return Account(trails, ends)
