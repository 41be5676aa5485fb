"""The broker's transcript as the ground truth of an attribution made through a consequence.

A check that can only see a clause through its consequence (`consequence_of:`: the gatherer
counted replies Unmatched, so a responder left out responseMessageId) guesses whose side
broke it. The transcript (acemq_interop/amqp/transcript.py) shows what each side really
published: where it agrees, the attribution stands, citing the messages; where it refutes
it (every reply on the wire carries the header), the failure goes to the check's own clause
and the side that check judges, citing the same messages. Pure functions over transcript
records; nothing here touches the broker.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..results.model import PROBE


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
    """SG-3.1: every reply carries responseMessageId, valued the message_id of a request that
    named its address (a gatherer finds its gather by that value)."""
    found = replies(transcript, reply_queues)
    if not found:
        return None  # no reply on the wire: nothing to confirm or refute
    missing = [r["n"] for r in found if not _header(r, "responseMessageId")]
    if missing:
        return WireFinding(True, tuple(missing), f"the transcript's replies {_lines(missing)} carry no responseMessageId")
    wrong = []
    for reply in found:
        keys = set(reply.get("routing_keys") or [])
        ids = {_props(r).get("message_id") for r in transcript if r["n"] < reply["n"] and r.get("event") == "publish"
               and _addresses(r) & keys} - {None, ""}
        if ids and _header(reply, "responseMessageId") not in ids:
            wrong.append(reply["n"])
    if wrong:
        return WireFinding(True, tuple(wrong), f"the transcript's replies {_lines(wrong)} carry a responseMessageId that is "
                                               f"the message_id of no request naming their address")
    return WireFinding(False, tuple(r["n"] for r in found),
                       f"the transcript's replies {_lines([r['n'] for r in found])} all carry responseMessageId, "
                       f"each the message_id of a request naming its address")


def _lines(numbers: list[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers[:8]) + (f" and {len(numbers) - 8} more" if len(numbers) > 8 else "")


# The clauses the wire can confirm or refute, each with how.
CONFIRMS: dict[str, Callable[[list[dict[str, Any]], set[str]], WireFinding | None]] = {
    "SG-3.1": _response_message_id,
}


def extra_publishes_by_others(transcript: list[dict[str, Any]] | None, peer: str) -> WireFinding | None:
    """SG-2.2 judged by counting (a probe queue bound to the fanout exchange): refuted when the
    gatherer `peer` published one message to each exchange and the extra ones there came from
    other peers (a responder replying through the fanout breaks RR-4.1, not the gatherer's
    SG-2.2). None when the transcript cannot tell."""
    if not transcript:
        return None
    by_exchange: dict[str, list[dict[str, Any]]] = {}
    for r in transcript:
        if r.get("event") == "publish" and r.get("exchange") and r.get("who") != PROBE:
            by_exchange.setdefault(str(r["exchange"]), []).append(r)
    mine = {x: [r for r in rs if (publisher(r) or ("",))[0] == peer] for x, rs in by_exchange.items()}
    others = {x: [r for r in rs if publisher(r) is not None and publisher(r)[0] != peer] for x, rs in by_exchange.items()}
    if not any(mine.values()) or any(len(rs) > 1 for rs in mine.values()) or not any(others.values()):
        return None
    lines = [r["n"] for rs in others.values() for r in rs]
    return WireFinding(False, tuple(lines), f"the gatherer published one message per exchange; the extra ones "
                                            f"({_lines(lines)}) were published by other peers")


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


# -- every message a peer published, against the clauses one message can show ----------

NARROW_TYPES = ("B", "u", "i")  # WF-2.1: never written
STRING_HEADERS = ("acemq-reply-to", "acemq-error", "acemq-dead-letter-reason", "responseMessageId")  # RR-2.1


@dataclass(frozen=True)
class WireBreak:
    """A clause one published message breaks, by the peer (spec label) that published it."""

    clause: str
    peer: str
    n: int  # the message's number in the transcript
    message: str
    expected: Any
    observed: Any


def publisher(record: dict[str, Any]) -> tuple[str, str] | None:
    """(spec label, requester | responder) of a publish the transcript could name, else None."""
    who = str(record.get("who") or "")
    for side in ("requester", "responder"):
        suffix = f" ({side})"
        if who.endswith(suffix):
            return who[: -len(suffix)], side
    return None


def _narrow(value: Any, path: str) -> list[str]:
    """Dotted paths of every value typed B, u or i, nested ones included."""
    if not isinstance(value, dict) or "type" not in value:
        return []
    found = [path] if value["type"] in NARROW_TYPES else []
    inner = value.get("value")
    if isinstance(inner, dict):
        for key, item in inner.items():
            found += _narrow(item, f"{path}.{key}")
    elif isinstance(inner, list):
        for i, item in enumerate(inner):
            found += _narrow(item, f"{path}.{i}")
    return found


def _common(record: dict[str, Any], peer: str, n: int) -> list[WireBreak]:
    found = []
    headers = record.get("headers") or {}
    for name in STRING_HEADERS:
        typed = headers.get(name)
        if isinstance(typed, dict) and typed.get("type") != "S":
            found.append(WireBreak("RR-2.1", peer, n, f"message #{n} carries {name} as AMQP type "
                                   f"{typed.get('type')!r}, not a long string (S)", "S", typed.get("type")))
    narrow = [p for name, typed in headers.items() for p in _narrow(typed, name)]
    if narrow:
        found.append(WireBreak("WF-2.1", peer, n, f"message #{n} carries header value(s) typed B, u or i: {', '.join(narrow)}",
                               "no B, u or i", narrow))
    return found


def _request(record: dict[str, Any], peer: str, id_clause: str | None) -> list[WireBreak]:
    """A request or a gather's copy: both reply addresses, equal and not empty, and an id a
    reply can be matched by (`id_clause`: RR-8.1 for a request, SG-1.1 for a gather's copy;
    None when the cell cannot tell which the message was)."""
    n = record["n"]
    native = (record.get("properties") or {}).get("reply_to")
    typed = (record.get("headers") or {}).get("acemq-reply-to")
    header = typed.get("value") if isinstance(typed, dict) else None
    found = []
    if native is None:
        found.append(WireBreak("RR-1.1", peer, n, f"request #{n} has no reply_to", "a reply_to", None))
    elif native == "":
        found.append(WireBreak("RR-3.3", peer, n, f"request #{n} has an empty reply_to", "a non-empty reply_to", ""))
    if typed is None:
        found.append(WireBreak("RR-1.2", peer, n, f"request #{n} has no acemq-reply-to header", "acemq-reply-to", None))
    elif native and header not in (None, "") and header != native:
        found.append(WireBreak("RR-1.3", peer, n, f"request #{n}'s acemq-reply-to differs from its reply_to", native, header))
    if id_clause is not None and not (record.get("properties") or {}).get("message_id"):
        # A reply carries the request's message_id back (RR-4.2, SG-3.1): without one no reply
        # can ever find its caller, whatever the responder does.
        found.append(WireBreak(id_clause, peer, n, f"request #{n} has no message_id: no reply can be matched to it",
                               "a message_id", None))
    message_id, correlation_id = (record.get("properties") or {}).get("message_id"), (record.get("properties") or {}).get("correlation_id")
    if id_clause == "RR-8.1" and message_id and correlation_id != message_id:
        # Every responder that is not acemq echoes correlation_id (the tutorial's, RpcServer,
        # NestJS, rabbitmq-client): a request without it equal to its message_id cannot be
        # answered by them, in any cell, whoever answers it here.
        found.append(WireBreak("RR-8.4", peer, n, f"request #{n}'s correlation_id is not its message_id",
                               message_id, correlation_id))
    return found + _common(record, peer, n)


def _reply(record: dict[str, Any], peer: str, answered: list[dict[str, Any]]) -> list[WireBreak]:
    """A reply, beside the requests it may answer (`answered`: those published before it that
    named its address; [] when the transcript holds none)."""
    n = record["n"]
    properties = record.get("properties") or {}
    headers = record.get("headers") or {}
    found = []
    if properties.get("content_type") != "application/json":
        found.append(WireBreak("RR-4.3", peer, n, f"reply #{n}'s content_type is not application/json",
                               "application/json", properties.get("content_type")))
    # The request's id (RR-4.2, SG-3.1): its message_id, else its correlation_id (a tutorial
    # caller's). A request with neither leaves its responder nothing to echo: a reply to it is
    # not judged on responseMessageId or correlation_id (the requester's RR-8.1 is the break).
    ids = [_request_id(r) for r in answered]
    echoable = not answered or any(ids)
    if echoable and "responseMessageId" not in headers:
        found.append(WireBreak("SG-3.1", peer, n, f"reply #{n} has no responseMessageId header", "responseMessageId", None))
    echoed = _header(record, "responseMessageId")
    if answered and any(ids) and echoed is not None and echoed not in ids:
        # A value, not only a presence: the id a reply echoes is the one a gatherer finds it by.
        found.append(WireBreak("SG-3.1", peer, n, f"reply #{n}'s responseMessageId {echoed!r} is the message_id of no "
                               f"request that named its address ({_lines([r['n'] for r in answered])})",
                               [i for i in ids if i], echoed))
    if answered and any(ids) and properties.get("correlation_id") not in ids:
        found.append(WireBreak("RR-4.2", peer, n, f"reply #{n}'s correlation_id is the id of no request "
                               f"that named its address ({_lines([r['n'] for r in answered])})",
                               [i for i in ids if i], properties.get("correlation_id")))
    if "acemq-error" in headers and record.get("body_length"):
        found.append(WireBreak("RR-10.1", peer, n, f"failure reply #{n} has a body of {record.get('body_length')} bytes",
                               "an empty body", record.get("body_length")))
    return found + _common(record, peer, n)


def _request_id(record: dict[str, Any]) -> str | None:
    """A request's id (RR-4.2): its message_id, or its correlation_id when it has none."""
    properties = record.get("properties") or {}
    return properties.get("message_id") or properties.get("correlation_id")


def _is_reply(record: dict[str, Any]) -> bool:
    """A message only a responder writes: it answers a request (responseMessageId) or fails one."""
    headers = record.get("headers") or {}
    return "responseMessageId" in headers or "acemq-error" in headers


def _addresses(record: dict[str, Any]) -> set[str]:
    native = (record.get("properties") or {}).get("reply_to")
    typed = (record.get("headers") or {}).get("acemq-reply-to")
    header = typed.get("value") if isinstance(typed, dict) else None
    return {a for a in (native, header) if isinstance(a, str) and a}


def message_breaks(transcript: list[dict[str, Any]], judged: set[str], reply_targets: set[str],
                   id_clauses: dict[str, str] | None = None) -> list[WireBreak]:
    """Every clause a message of the transcript breaks, for publishers in `judged` (spec
    labels whose connection the transcript names without doubt: current-profile peers, one
    spec per peer process in the cell; a profile replays an older spec on purpose).

    What a message is comes from where it goes, not from who sent it (one connection may
    carry a peer's requester and responder): a publish to the default exchange routed to a
    reply target (a requester's reply queue, a probe inbox) is a reply, one to a `.dlq`
    queue a dead-letter, any other a request or a gather's copy. A publish the transcript
    cannot name is not judged: a guess would charge an innocent peer. `id_clauses` says, per
    publisher, the clause a request without a message_id breaks (RR-8.1 for a requester that
    only made requests in the cell, SG-1.1 for one that only gathered); absent, it is not judged."""
    found: list[WireBreak] = []
    # Every address a request of the cell named is a reply target too (a queue per request).
    targets = set(reply_targets) | {a for r in transcript if r.get("event") == "publish" for a in _addresses(r)}
    requests: list[dict[str, Any]] = []  # every request so far (by anyone), for the replies after it
    for record in transcript:
        if record.get("event") != "publish":
            continue
        keys = [str(k) for k in record.get("routing_keys") or []]
        to_default = record.get("exchange") == ""
        is_reply = to_default and any(k in targets for k in keys)
        is_dead_letter = to_default and any(k.endswith(".dlq") for k in keys)
        named = publisher(record)
        # A responder's message that names no reply address and echoes an earlier request's
        # message_id (not its own) as its correlation_id is a reply, wherever it went: a reply
        # sent back through a gather's fanout is not a request. (A gather's copy published twice
        # names its address and carries its own message_id as its correlation_id.)
        echoed = _props(record).get("correlation_id")
        answers = named is not None and named[1] == "responder" and not to_default and bool(echoed) \
            and not _addresses(record) and echoed != _props(record).get("message_id") \
            and any(_props(r).get("message_id") == echoed for r in requests)
        if not is_reply and not is_dead_letter and not _is_reply(record) and not answers:
            requests.append(record)
        if named is None or named[0] not in judged:
            continue
        peer = named[0]
        if is_dead_letter:
            found += _common(record, peer, record["n"])
        elif is_reply:
            answered = [r for r in requests if any(k in _addresses(r) for k in keys)]
            found += _reply(record, peer, answered)
        elif _is_reply(record) or answers:  # a reply sent anywhere but the default exchange
            found.append(WireBreak("RR-4.1", peer, record["n"], f"reply #{record['n']} was published to exchange "
                                   f"{record.get('exchange')!r}, not to the default exchange with its address as routing key",
                                   "the default exchange", record.get("exchange")))
            found += _reply(record, peer, [])
        else:
            found += _request(record, peer, (id_clauses or {}).get(peer))
    return found


# -- a call's path on the wire: whose side a failed outcome shows broken -------------------


@dataclass(frozen=True)
class CallFinding:
    """The break the wire shows earliest on a call's path (request, delivery, reply), and whose:
    `peer` is the spec label of the publisher or consumer the transcript named."""

    clause: str
    peer: str
    lines: tuple[int, ...]
    text: str


def _props(record: dict[str, Any]) -> dict[str, Any]:
    return record.get("properties") or {}


def _request_of(transcript: list[dict[str, Any]], requester: str, exchange: str, routing_key: str,
                sent_t: float, message_id: Any = None) -> dict[str, Any] | None:
    """The request `requester` (a spec label) published to (exchange, routing key) for a call
    made at `sent_t` (cell seconds): the one with the call's `message_id` when the peer told it
    (a requester whose calls wait for one another publishes another call's request first),
    else the first from `sent_t` on; or None."""
    mine = f"{requester} (requester)"
    candidates = [r for r in transcript if r.get("event") == "publish" and r.get("who") == mine
                  and r.get("exchange") == exchange and routing_key in (r.get("routing_keys") or [])
                  and float(r.get("t", 0)) >= sent_t - 0.05]
    exact = next((r for r in candidates if _props(r).get("message_id") == message_id), None) \
        if isinstance(message_id, str) and message_id else None
    return exact or (candidates[0] if candidates else None)


def first_reply_after(transcript: list[dict[str, Any]], requester: str, exchange: str, routing_key: str,
                      sent_t: float, message_id: Any = None) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
    """A call's request on the wire and the first reply to it (to an address it named, with its
    message_id as correlation_id), or (request, None); None when the request is not there."""
    request = _request_of(transcript, requester, exchange, routing_key, sent_t, message_id)
    if request is None:
        return None
    message_id, addresses = _props(request).get("message_id"), _addresses(request)
    reply = next((r for r in transcript if r["n"] > request["n"] and r.get("event") == "publish" and r.get("exchange") == ""
                  and any(k in addresses for k in r.get("routing_keys") or [])
                  and message_id and _props(r).get("correlation_id") == message_id), None)
    return request, reply


def diagnose_call(transcript: list[dict[str, Any]], requester: str, exchange: str, routing_key: str,
                  sent_t: float, failure_expected: bool = False, message_id: Any = None) -> CallFinding | None:
    """What the wire says went wrong with one request of `requester` (a spec label) sent at
    `sent_t` (seconds into the cell) to (exchange, routing key), when a check of its outcome
    failed: the first break on its path, and who made it. None when the wire shows the request
    went out, was answered to its address with its message_id, and (with `failure_expected`)
    carried acemq-error: then the requester's own check stands; also None when the transcript
    cannot tell (no such publish named, a probe on the path)."""
    request = _request_of(transcript, requester, exchange, routing_key, sent_t, message_id)
    if request is None:
        return None
    n = request["n"]
    # The request's id (RR-4.2 as amended): its message_id, else its correlation_id (a
    # tutorial caller's). Only a request with neither can never be answered so that it matches.
    message_id = _props(request).get("message_id") or _props(request).get("correlation_id")
    if not message_id:
        return CallFinding("RR-8.1", requester, (n,), f"request #{n} carried no message_id (and no correlation_id): "
                           "no reply can be matched to it")
    addresses = _addresses(request)
    if not addresses:
        clause = "RR-3.3" if _props(request).get("reply_to") == "" else "RR-1.1"
        return CallFinding(clause, requester, (n,), f"request #{n} named no reply address")
    later = [r for r in transcript if r["n"] > n]
    replies = [r for r in later if r.get("event") == "publish" and r.get("exchange") == ""
               and any(k in addresses for k in r.get("routing_keys") or [])]
    if not replies:
        delivered = next((r for r in later if r.get("event") == "deliver"
                          and (_props(r).get("message_id") or _props(r).get("correlation_id")) == message_id
                          and str(r.get("who") or "").endswith(" (responder)")), None)
        if delivered is None or publisher(delivered) is None:
            return None  # nobody the cell knows took it: nothing to say of a responder
        responder = publisher(delivered)[0]  # type: ignore[index]
        # Its reply went out, to the caller's address, through another exchange: the address
        # was read right and the publish was wrong (RR-4.1), whatever the request offered.
        misrouted = next((r for r in later if r["n"] > delivered["n"] and r.get("event") == "publish"
                          and r.get("exchange") and publisher(r) == (responder, "responder")
                          and _props(r).get("correlation_id") == message_id
                          and any(k in addresses for k in r.get("routing_keys") or [])), None)
        if misrouted is not None:
            return CallFinding("RR-4.1", responder, (n, delivered["n"], misrouted["n"]),
                               f"request #{n} was delivered to {responder} (#{delivered['n']}), which published its "
                               f"reply #{misrouted['n']} to exchange {misrouted['exchange']!r}, not to the default exchange")
        header = (request.get("headers") or {}).get("acemq-reply-to")
        native = _props(request).get("reply_to")
        # A handler that threw and no failure reply sent: RR-10.1 (a retry policy in its
        # place, as .NET up to 0.7.12 had). Otherwise, which reading failed, by what the
        # request offered: only reply_to (RR-3.2), only the header (RR-3.1); both, and still
        # nothing was sent to either (RR-4.1).
        if failure_expected:
            clause = "RR-10.1"
        else:
            clause = "RR-3.2" if header is None and native else "RR-3.1" if not native else "RR-4.1"
        return CallFinding(clause, responder, (n, delivered["n"]),
                           f"request #{n} was delivered to {responder} (#{delivered['n']}), which published no reply "
                           f"to {', '.join(sorted(addresses))}")
    answered = [r for r in replies if _props(r).get("correlation_id") == message_id]
    if not answered:
        named = publisher(replies[0])
        if named is None:
            return None
        return CallFinding("RR-4.2", named[0], (n, replies[0]["n"]),
                           f"reply #{replies[0]['n']}'s correlation_id {_props(replies[0]).get('correlation_id')!r} "
                           f"is not request #{n}'s id {message_id!r}")
    reply = answered[0]
    named = publisher(reply)
    if failure_expected and named is not None and "acemq-error" not in (reply.get("headers") or {}):
        return CallFinding("RR-10.1", named[0], (n, reply["n"]),
                           f"reply #{reply['n']} to request #{n} carries no acemq-error (body of {reply.get('body_length')} bytes)")
    return None


def unanswered_request(transcript: list[dict[str, Any]], address: str) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """The probe's first request naming `address` in both places (`acemq-reply-to` and
    `reply_to`, so no reading of either explains it) that was delivered to a responder the
    transcript names and never redelivered, where that responder published nothing at all
    after it: (the request, its delivery, the responder's spec label), else None."""
    for request in transcript:
        if request.get("event") != "publish" or request.get("who") != PROBE or address not in _addresses(request):
            continue
        typed = (request.get("headers") or {}).get("acemq-reply-to")
        if not (isinstance(typed, dict) and typed.get("value")) or not _props(request).get("reply_to"):
            continue  # one address only: which reading failed is the scenario's own question
        message_id = _props(request).get("message_id")
        if not message_id:
            continue
        deliveries = [r for r in transcript if r["n"] > request["n"] and r.get("event") == "deliver"
                      and _props(r).get("message_id") == message_id and str(r.get("who") or "").endswith(" (responder)")]
        if len(deliveries) != 1 or publisher(deliveries[0]) is None:
            continue  # never delivered, redelivered (a retry: another clause), or to no one named
        responder = publisher(deliveries[0])[0]  # type: ignore[index]
        answered = any(r.get("event") == "publish" and r["n"] > deliveries[0]["n"] and (publisher(r) or ("",))[0] == responder
                       for r in transcript)
        if not answered:
            return request, deliveries[0], responder
    return None


def publishes_to(transcript: list[dict[str, Any]], queue: str, until: float) -> dict[int, tuple[str, str]]:
    """Every publish the transcript names that the broker routed to `queue` up to `until`
    (cell seconds): message number -> (publisher's spec label, requester | responder)."""
    found = {}
    for r in transcript:
        named = publisher(r)
        if r.get("event") == "publish" and named is not None and queue in (r.get("routed_queues") or []) \
                and float(r.get("t", 0)) <= until:
            found[r["n"]] = named
    return found


def published_by(transcript: list[dict[str, Any]], label: str, side: str) -> list[dict[str, Any]]:
    """Every publish of the peer spec `label` playing `side` (requester | responder)."""
    return [r for r in transcript if r.get("event") == "publish" and publisher(r) == (label, side)]


def requests_left_unanswered(transcript: list[dict[str, Any]], requester: str) -> list[tuple[dict[str, Any], dict[str, Any], str]]:
    """Each request of `requester` (a spec label) delivered to a responder the transcript names
    that published nothing at all after it, nor had it redelivered: (request, delivery,
    responder label). The request's id is its message_id, else its correlation_id."""
    found = []
    for request in published_by(transcript, requester, "requester"):
        rid = _props(request).get("message_id") or _props(request).get("correlation_id")
        if not rid:
            continue
        deliveries = [r for r in transcript if r["n"] > request["n"] and r.get("event") == "deliver"
                      and (_props(r).get("message_id") or _props(r).get("correlation_id")) == rid
                      and str(r.get("who") or "").endswith(" (responder)")]
        if len(deliveries) != 1 or publisher(deliveries[0]) is None:
            continue
        responder = publisher(deliveries[0])[0]  # type: ignore[index]
        if not any(r["n"] > deliveries[0]["n"] for r in published_by(transcript, responder, "responder")):
            found.append((request, deliveries[0], responder))
    return found


def unroutable_replies(transcript: list[dict[str, Any]], declared: set[str]) -> tuple[str, list[int]] | None:
    """An address some request named that is none of the requester's `declared` reply queues,
    to which replies were published and routed nowhere, and to which nothing in the transcript
    was ever routed: (the address, the replies' numbers), else None. A reply queue that existed
    and went away (a requester closed) routed something before, or was declared: not this; nor
    direct reply-to, which no queue ever shows routed and which delivers all the same."""
    named = {a for r in transcript if r.get("event") == "publish" for a in _addresses(r)} - declared
    for address in sorted(named):
        if address.startswith("amq.rabbitmq.reply-to"):
            continue  # direct reply-to: routed to no queue by design, delivered all the same (RR-14.5)
        to_it = [r for r in transcript if r.get("event") == "publish" and r.get("exchange") == ""
                 and address in (r.get("routing_keys") or [])]
        if to_it and not any(r.get("routed_queues") for r in to_it) and \
                not any(r.get("event") == "deliver" and r.get("queue") == address for r in transcript):
            return address, [r["n"] for r in to_it]
    return None


def direct_replies(transcript: list[dict[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """Replies published to direct reply-to addresses (`amq.rabbitmq.reply-to.<token>`), by the
    responder the transcript names, then by the correlation_id they carry: message numbers."""
    found: dict[str, dict[str, list[int]]] = {}
    for r in transcript:
        named = publisher(r)
        if r.get("event") != "publish" or r.get("exchange") != "" or named is None or named[1] != "responder":
            continue
        if any(str(k).startswith("amq.rabbitmq.reply-to.") for k in r.get("routing_keys") or []):
            found.setdefault(named[0], {}).setdefault(str(_props(r).get("correlation_id")), []).append(r["n"])
    return found
