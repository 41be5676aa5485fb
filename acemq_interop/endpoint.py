"""How to reach a broker (AMQP and its management API), and a free loopback port for one.

The bottom of the broker floor: the lifecycle (broker.py) and the container
(broker_container.py) both build endpoints, so neither imports the other for it.
"""
from __future__ import annotations

import socket
import urllib.parse
from dataclasses import dataclass

from .management import Management


@dataclass
class BrokerEndpoint:
    """How to reach a broker: AMQP on host:port, management API at mgmt_url.

    With `ca_file` the AMQP port is a TLS one: URLs are `amqps://`, and every client of
    the run verifies the broker's certificate against that CA (acemq_interop/tls.py).
    """

    host: str
    port: int
    username: str
    password: str
    mgmt_url: str
    ca_file: str | None = None

    @property
    def tls(self) -> bool:
        return self.ca_file is not None

    def amqp_url(self, vhost: str) -> str:
        user = urllib.parse.quote(self.username, safe="")
        password = urllib.parse.quote(self.password, safe="")
        scheme = "amqps" if self.tls else "amqp"
        return f"{scheme}://{user}:{password}@{self.host}:{self.port}/{urllib.parse.quote(vhost, safe='')}"

    def management(self) -> Management:
        return Management(self.mgmt_url, self.username, self.password)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def loopback_endpoint(amqp_port: int, mgmt_port: int, tls_port: int | None = None,
                      ca_file: str | None = None) -> BrokerEndpoint:
    """A broker the harness started on 127.0.0.1 (a private node or a container), as guest.

    With --tls the broker has a TLS listener beside the plain one (kept for the harness's own
    checks), and the endpoint every client of the run gets is the TLS one."""
    mgmt = f"http://127.0.0.1:{mgmt_port}"
    if tls_port is None:
        return BrokerEndpoint("127.0.0.1", amqp_port, "guest", "guest", mgmt)
    return BrokerEndpoint("127.0.0.1", tls_port, "guest", "guest", mgmt, ca_file=ca_file)
