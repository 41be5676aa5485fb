"""acemq for Python: request/reply and scatter-gather over RabbitMQ (pika).

    with Requester.open("amqp://guest:guest@localhost/") as requester:
        quote = requester.request("pricing", "quote.requested", {"sku": "A-1"}, timeout=5)

    responder = Responder.start(url, "pricing.requests", lambda request: quote(request.body))

    # A cluster's nodes, tried in order, and the name the management UI shows; a lost
    # connection is opened again by itself (pending calls end with ConnectionLost):
    requester = Requester.open(["amqp://node-a/", "amqp://node-b/"], connection_name="pricing-api")

    # TLS, trusting a CA of your own (the broker's name is checked against the URL's host):
    requester = Requester.open(tls_parameters("amqps://user:pass@broker:5671/", "/etc/ssl/our-ca.pem"))
"""

from .errors import (
    AcemqError,
    ConnectionLost,
    ReplyDecodeError,
    RequestRefused,
    RequestTimedOut,
    RequestTimeoutError,
    RequesterClosed,
    ResponderFailed,
    ShortStringTooLong,
)
from .connection import Broker, Brokers, tls_parameters
from .hooks import RequesterObserver, ResponderObserver
from .requester import PendingGather, PendingRequest, Requester
from .responder import Binding, Request, Responder
from .wire import ERROR_HEADER, REPLY_TO_HEADER, RESPONSE_MESSAGE_ID_HEADER

__version__ = "0.9.0"

__all__ = [
    "AcemqError",
    "Binding",
    "Broker",
    "Brokers",
    "ConnectionLost",
    "ERROR_HEADER",
    "PendingGather",
    "PendingRequest",
    "REPLY_TO_HEADER",
    "RESPONSE_MESSAGE_ID_HEADER",
    "ReplyDecodeError",
    "Request",
    "RequestRefused",
    "RequestTimedOut",
    "RequestTimeoutError",
    "Requester",
    "RequesterClosed",
    "Responder",
    "ResponderFailed",
    "ResponderObserver",
    "RequesterObserver",
    "ShortStringTooLong",
    "__version__",
    "tls_parameters",
]
