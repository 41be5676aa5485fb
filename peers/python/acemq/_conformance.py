"""Private: the conformance adapter's door into the binding. Not part of acemq's API.

Only the suite's peer adapter (acemq_peer) imports this module: it opens
requesters and responders with a policy other than the spec's, to replay an
older release or to show a deliberate defect is caught. A service uses
``Requester.open`` and ``Responder.start``, which always follow the spec.
Nothing here is re-exported by ``acemq``, and it may change without notice.
"""

from __future__ import annotations

from typing import Any

from ._policy import RequesterPolicy, ResponderPolicy
from .connection import Broker
from .requester import Requester
from .responder import Handler, Responder

__all__ = ["RequesterPolicy", "ResponderPolicy", "open_requester", "start_responder"]


def open_requester(url: Broker, policy: RequesterPolicy, **options: Any) -> Requester:
    """``Requester.open`` with ``policy`` instead of the spec's defaults."""
    return Requester._open(url, policy, **options)


def start_responder(url: Broker, queue: str, handler: Handler, policy: ResponderPolicy, **options: Any) -> Responder:
    """``Responder.start`` with ``policy`` instead of the spec's defaults."""
    return Responder._start_with(url, queue, handler, policy, **options)
