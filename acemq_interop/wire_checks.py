"""The broker's transcript as the ground truth of an attribution made through a consequence.

A check that can only see a clause through its consequence (`consequence_of:`: the gatherer
counted replies Unmatched, so a responder left out responseMessageId) guesses whose side
broke it. The transcript (acemq_interop/transcript.py) shows what each side really
published: where it agrees, the attribution stands, citing the messages; where it refutes
it (every reply on the wire carries the header), the failure goes to the check's own clause
and the side that check judges, citing the same messages. Pure functions over transcript
records; nothing here touches the broker.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .model import PROBE


@dataclass(frozen=True)
class WireFinding:
    """What the transcript says of a clause: `confirmed` True (broken on the wire), False
    (refuted: the wire shows it kept), with the message numbers (`n`) it rests on."""

    confirmed: bool
    lines: tuple[int, ...]
    text: str


def _header(record: dict[str, Any], name: str) -> Any:
    value = (record.get("headers") or {}).get(name)
    return value.get("value") if isinstance(value, dict) else value


def replies(transcript: list[dict[str, Any]], reply_queues: set[str]) -> list[dict[str, Any]]:
    """Every reply a peer published: to the default exchange, routed by a requester's reply queue."""
    return [r for r in transcript
            if r.get("event") == "publish" and r.get("exchange") == "" and r.get("who") != PROBE
            and any(k in reply_queues for k in r.get("routing_keys") or [])]


def _response_message_id(transcript: list[dict[str, Any]], reply_queues: set[str]) -> WireFinding | None:
    """SG-3.1: every reply carries responseMessageId."""
    found = replies(transcript, reply_queues)
    if not found:
        return None  # no reply on the wire: nothing to confirm or refute
    missing = [r["n"] for r in found if not _header(r, "responseMessageId")]
    if missing:
        return WireFinding(True, tuple(missing), f"the transcript's replies {_lines(missing)} carry no responseMessageId")
    return WireFinding(False, tuple(r["n"] for r in found),
                       f"the transcript's replies {_lines([r['n'] for r in found])} all carry responseMessageId")


def _lines(numbers: list[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers[:8]) + (f" and {len(numbers) - 8} more" if len(numbers) > 8 else "")


# The clauses the wire can confirm or refute, each with how.
CONFIRMS: dict[str, Callable[[list[dict[str, Any]], set[str]], WireFinding | None]] = {
    "SG-3.1": _response_message_id,
}


def reply_queues_of(trace: list[dict[str, Any]]) -> set[str]:
    """The reply queues the cell's requesters declared (their `requester.open` answers)."""
    return {str(s["answer"]["reply_queue"]) for s in trace
            if s.get("step") == "requester.open" and isinstance(s.get("answer"), dict) and s["answer"].get("reply_queue")}


def judge(clause: str, transcript: list[dict[str, Any]] | None, trace: list[dict[str, Any]]) -> WireFinding | None:
    """What the wire says of `clause` in this cell, or None (no transcript, or nothing to say)."""
    how = CONFIRMS.get(clause)
    if how is None or not transcript:
        return None
    return how(transcript, reply_queues_of(trace))
