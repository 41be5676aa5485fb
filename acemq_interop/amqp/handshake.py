"""One AMQP handshake, as a check: does the broker at HOST:PORT let USER into VHOST now?

The pre-flight (broker/preflight.py) and a started node's readiness ask it; they get either
nothing (the handshake completed and the connection was closed) or `HandshakeFailed`,
which says what kind of refusal it was and the innermost words of its cause, so the
caller can say what to do without knowing pika's exceptions.
"""
from __future__ import annotations

import socket
import ssl

import pika
import pika.exceptions
from pika.adapters.utils.connection_workflow import AMQPConnectorException, AMQPConnectorStackTimeout


class HandshakeFailed(Exception):
    """A handshake that did not complete.

    `kind`: "login" (the credentials were refused), "vhost" (logged in, the vhost refused),
    "protocol" (the port does not speak AMQP 0-9-1), "silent" (the port accepted the TCP
    connection and never answered the protocol header within the bound), or None;
    `timed_out` when a socket timeout ended it; `cause` the cause's class name; `text` the innermost words."""

    def __init__(self, kind: str | None, cause: str, text: str, timed_out: bool = False):
        super().__init__(f"{cause}: {text}")
        self.kind, self.cause, self.text, self.timed_out = kind, cause, text, timed_out


def _describe(exc: BaseException, depth: int = 0) -> str:
    """pika wraps the cause in exceptions whose str() is empty: the innermost words."""
    parts = []
    inner = getattr(exc, "exception", None)  # pika's connector errors keep their cause here
    for arg in (*exc.args, *([inner] if isinstance(inner, BaseException) else [])):
        if isinstance(arg, BaseException) and depth < 4:
            parts.append(f"{type(arg).__name__}: {_describe(arg, depth + 1)}")
        else:
            parts.append(str(arg))
    return "; ".join(p for p in parts if p) or type(exc).__name__


def _failed(exc: BaseException) -> HandshakeFailed:
    kind = None
    if isinstance(exc, (pika.exceptions.ProbableAuthenticationError, pika.exceptions.AuthenticationError)):
        kind = "login"
    elif isinstance(exc, pika.exceptions.ProbableAccessDeniedError):
        kind = "vhost"
    elif isinstance(exc, pika.exceptions.IncompatibleProtocolError):
        kind = "protocol"
    elif isinstance(exc, AMQPConnectorStackTimeout):  # not an AMQPError: pika raises it as it is
        kind = "silent"
    return HandshakeFailed(kind, type(exc).__name__, _describe(exc), timed_out=isinstance(exc, socket.timeout))


def handshake(host: str, port: int, vhost: str, username: str, password: str, ca_file: str | None,
              bound_s: float, connection_name: str) -> None:
    """Open a connection to `vhost` and close it; HandshakeFailed when it does not open.

    Over TLS (`ca_file`: --tls, or --broker amqps:// with --ca-cert) the broker is verified
    against that CA only. One attempt, bounded by `bound_s` (the socket by half of it)."""
    ssl_options = None
    if ca_file is not None:
        ssl_options = pika.SSLOptions(ssl.create_default_context(cafile=ca_file), server_hostname=host)
    params = pika.ConnectionParameters(
        host=host, port=port, virtual_host=vhost, ssl_options=ssl_options,
        credentials=pika.PlainCredentials(username, password),
        connection_attempts=1, retry_delay=0, socket_timeout=bound_s / 2, stack_timeout=bound_s,
        blocked_connection_timeout=bound_s, client_properties={"connection_name": connection_name})
    try:
        connection = pika.BlockingConnection(params)
    except (pika.exceptions.AMQPError, AMQPConnectorException, OSError) as exc:
        raise _failed(exc) from None
    try:
        connection.close()
    except (pika.exceptions.AMQPError, OSError):
        pass
