"""Facts about the broker a run is on, measured on it rather than read from its version.

`direct_reply_to_return`: what the broker does with a `mandatory` reply to a direct reply-to
address (`amq.rabbitmq.reply-to.<token>`) whose caller is consuming. RabbitMQ 3.10-4.1 deliver
it AND return it (`basic.return` NO_ROUTE); 4.2 returns none. RR-14.5 (publish such a reply
without `mandatory`, count it once, never retry it) is right on both; the broker axis measures
which one it ran on, so the report says it (docs/wire-spec.md, RR-14.5).
"""
from __future__ import annotations

import threading
import time

import pika
import pika.exceptions

from .tls import pika_parameters

DIRECT = "amq.rabbitmq.reply-to"


def direct_reply_to_return(amqp_url: str, ca_file: str | None = None, bound_s: float = 5.0) -> str | None:
    """`returned` (delivered and returned, 3.10-4.1), `not returned` (4.2+), or None when it
    could not be measured within `bound_s` (never raises, never holds the run longer: it is a
    fact shown, not a check; a broker whose alarm blocks publishers blocks this publish too,
    so it runs in a thread of its own, left behind, its connection bounded, at the bound)."""
    found: list[str | None] = []
    worker = threading.Thread(target=lambda: found.append(_measure(amqp_url, ca_file, bound_s)),
                              name="broker-fact", daemon=True)
    worker.start()
    worker.join(bound_s + 1.0)
    return found[0] if found else None


def _measure(amqp_url: str, ca_file: str | None, bound_s: float) -> str | None:
    try:
        params = pika_parameters(amqp_url, ca_file, "acemq-interop broker fact")
        params.blocked_connection_timeout = bound_s
        connection = pika.BlockingConnection(params)
    except Exception:  # noqa: BLE001 - a broker that refuses this refuses the run, with its own message
        return None
    try:
        caller = connection.channel()
        delivered: list[bytes] = []
        caller.basic_consume(DIRECT, lambda _ch, _m, _p, body: delivered.append(body), auto_ack=True)
        # The broker rewrites reply_to on publish: a message to a queue of the caller's shows the address.
        mirror = caller.queue_declare("", exclusive=True).method.queue
        caller.basic_publish("", mirror, b"", pika.BasicProperties(reply_to=DIRECT))
        deadline = time.monotonic() + bound_s
        address = None
        while address is None and time.monotonic() < deadline:
            method, properties, _ = caller.basic_get(mirror, auto_ack=True)
            if method is not None:
                address = properties.reply_to
            else:
                connection.process_data_events(0.02)
        if not address or not address.startswith(DIRECT + "."):
            return None
        responder = connection.channel()
        responder.confirm_delivery()
        try:
            responder.basic_publish("", address, b"{}", mandatory=True)
            returned = False
        except pika.exceptions.UnroutableError:
            returned = True
        while not delivered and time.monotonic() < deadline:
            connection.process_data_events(0.02)
        if not delivered:
            return "returned, not delivered" if returned else None
        return "returned" if returned else "not returned"
    except Exception:  # noqa: BLE001
        return None
    finally:
        try:
            connection.close()
        except Exception:  # noqa: BLE001
            pass
