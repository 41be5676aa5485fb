"""How to reach a broker (AMQP and its management API), and a free loopback port for one.

The bottom of the broker floor: the lifecycle, the private node and the container all
build endpoints, so none imports another for it. A `--broker` URL is parsed here.
"""
from __future__ import annotations

import socket
import urllib.parse
from dataclasses import dataclass

from ..amqp.tls import DEFAULT_TLS_PORT
from ..core.errors import UsageError
from .management import Management


@dataclass
class BrokerEndpoint:
    """How to reach a broker: AMQP on host:port, management API at mgmt_url.

    With `ca_file` the AMQP port is a TLS one: URLs are `amqps://`, and every client of
    the run verifies the broker's certificate against that CA (acemq_interop/amqp/tls.py).
    """

    host: str
    port: int
    username: str
    password: str
    mgmt_url: str
    ca_file: str | None = None
    # A cluster's every node (this one first), each an endpoint of its own; () on one node.
    nodes: tuple["BrokerEndpoint", ...] = ()

    @property
    def tls(self) -> bool:
        return self.ca_file is not None

    def amqp_urls(self, vhost: str) -> list[str]:
        """Every node's URL with the vhost, this one first (the peers' `amqp_urls`)."""
        return [node.amqp_url(vhost) for node in (self.nodes or (self,))]

    def amqp_url(self, vhost: str) -> str:
        user = urllib.parse.quote(self.username, safe="")
        password = urllib.parse.quote(self.password, safe="")
        scheme = "amqps" if self.tls else "amqp"
        return f"{scheme}://{user}:{password}@{self.host}:{self.port}/{urllib.parse.quote(vhost, safe='')}"

    def management(self) -> Management:
        """The management API; of a cluster, whichever node's answers (this one's first)."""
        return Management(self.mgmt_url, self.username, self.password,
                          tuple(node.mgmt_url for node in self.nodes if node.mgmt_url != self.mgmt_url))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_in_use(port: int) -> bool:
    """Whether something listens on `port` of this host (a broker with fixed listeners binds
    every interface, so the test binds them all). SO_REUSEADDR as servers set it: the
    TIME-WAIT connections a broker stopped a moment ago leaves do not count."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def loopback_endpoint(amqp_port: int, mgmt_port: int, tls_port: int | None = None,
                      ca_file: str | None = None) -> BrokerEndpoint:
    """A broker the harness started on 127.0.0.1 (a private node or a container), as guest.

    With --tls the broker has a TLS listener beside the plain one (kept for the harness's own
    checks), and the endpoint every client of the run gets is the TLS one."""
    mgmt = f"http://127.0.0.1:{mgmt_port}"
    if tls_port is None:
        return BrokerEndpoint("127.0.0.1", amqp_port, "guest", "guest", mgmt)
    return BrokerEndpoint("127.0.0.1", tls_port, "guest", "guest", mgmt, ca_file=ca_file)


def check_management_url(mgmt_url: str | None) -> None:
    """`--management-url`: http(s)://HOST[:PORT][/PATH], and no credentials in it (the API is
    reached with --broker's user and password; a password here would be in every rerun line).
    Anything else is bad input (exit 2), said without its password."""
    if mgmt_url is None:
        return
    from ..core.redact import password_of, remember, url as redacted

    expected = "expected http://HOST:PORT (e.g. http://127.0.0.1:15672), or https://..."
    secret = password_of(mgmt_url)
    if secret:
        remember(secret)
    shown = redacted(mgmt_url)
    try:
        parts = urllib.parse.urlsplit(mgmt_url)
        parts.port  # noqa: B018  (a bad port raises here)
    except ValueError as exc:
        raise UsageError(f"--management-url {shown}: not a URL ({exc}); {expected}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--management-url {shown}: not an http(s) URL; {expected}")
    if parts.username is not None or parts.password is not None or secret:
        raise UsageError(f"--management-url {shown}: give it without a user or password: the management API is "
                         "reached with --broker's user and password")


def parse_broker_url(url: str, mgmt_url: str | None, ca_file: str | None = None) -> BrokerEndpoint:
    """An `amqp://user:pass@host:port/` URL, or `amqps://...` (port 5671) with the CA file that
    signed the broker's certificate; the management API defaults to port 15672.

    A malformed URL is bad input (exit 2) with a message that never shows the password."""
    from ..core.redact import remember, url as redacted

    shown = redacted(url)
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError as exc:
        raise UsageError(f"--broker {shown}: not a URL ({exc}); expected amqp://USER:PASS@HOST[:PORT]/") from None
    if parts.scheme not in ("amqp", "amqps") or not host:
        raise UsageError(f"--broker {shown}: expected amqp://USER:PASS@HOST[:PORT]/ or amqps://... "
                         f"(the harness makes its own vhost per run)")
    tls = parts.scheme == "amqps"
    if tls and ca_file is None:
        raise UsageError(f"--broker {shown}: an amqps broker needs --ca-cert FILE (the PEM file of the CA that signed its certificate)")
    if not tls and ca_file is not None:
        raise UsageError("--ca-cert is for a TLS broker: give --broker amqps://USER:PASS@HOST[:PORT]/ with it")
    password = urllib.parse.unquote(parts.password or "guest")
    remember(password)
    check_management_url(mgmt_url)
    return BrokerEndpoint(
        host=host,
        port=port or (DEFAULT_TLS_PORT if tls else 5672),
        username=urllib.parse.unquote(parts.username or "guest"),
        password=password,
        mgmt_url=mgmt_url or f"http://{host if ':' not in host else '[' + host + ']'}:15672",
        ca_file=ca_file,
    )
