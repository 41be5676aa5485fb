"""Pre-flight: before any peer starts or any cell runs, the broker is checked end to end.

Every cell needs the same three things of the broker, so each is checked once, up front,
and a problem is one line saying what is wrong and what to do (exit 3), instead of every
cell failing with its own language's version of the same error:
1. the management API answers, is RabbitMQ's, and accepts the user;
2. the user can create a vhost (the harness makes one per run) and delete it;
3. the AMQP port completes a handshake with the user's credentials, in that vhost;
4. no memory or disk alarm is in effect (it blocks every publisher: every cell would time
   out); a broker that does not show its nodes to the user is not refused for that.
A scratch vhost (`acemq-interop-preflight-*`, owner-recorded like a run's) carries 2 and 3
and is deleted at once. No message names a password.
"""
from __future__ import annotations

import uuid

from ..amqp.handshake import HandshakeFailed, handshake
from .endpoint import BrokerEndpoint
from ..core.errors import BrokerError
from .management import ManagementError
from ..core.redact import url as redacted_url

AMQP_BOUND_S = 10.0


def _api_problem(exc: ManagementError, endpoint: BrokerEndpoint, call: str) -> str:
    where = redacted_url(endpoint.mgmt_url)
    user = endpoint.username
    if exc.status == 0:
        return (f"the management API at {where} does not answer ({str(exc).split(': ', 1)[-1]}): enable it on the broker "
                "(rabbitmq-plugins enable rabbitmq_management) or give its address with --management-url")
    if exc.status == 401:
        return f"the management API at {where} refused user '{user}' (HTTP 401): check the user and password in --broker"
    if call == "GET /api/overview" and (exc.status == 404 or "not JSON" in str(exc)):
        return f"{where} does not look like RabbitMQ's management API ({exc}): check --management-url"
    return f"the management API at {where} failed: {exc}"


def _amqp_problem(exc: HandshakeFailed, endpoint: BrokerEndpoint) -> str:
    where = f"{endpoint.host}:{endpoint.port}"
    user = endpoint.username
    text = exc.text
    if exc.kind == "login":
        return (f"the broker at {where} refused AMQP login for user '{user}': check the user and password in --broker "
                "(a user limited to loopback, like guest by default, cannot log in from elsewhere)")
    if exc.kind == "vhost":
        return f"the broker at {where} let user '{user}' log in but refused the vhost: {text}"
    if exc.kind == "silent":
        return (f"the AMQP port {where} accepts connections but never answered the AMQP handshake within "
                f"{AMQP_BOUND_S:.0f}s: is RabbitMQ's AMQP listener there? (check the port in --broker)")
    if exc.kind == "protocol":
        return f"{where} does not speak AMQP 0-9-1 ({text}): is that the broker's AMQP port? (check the port in --broker)"
    if "certificate" in text.lower() or "ssl" in text.lower():
        return (f"the TLS handshake with {where} failed ({text}): the broker's certificate must chain to the CA "
                "given with --ca-cert and name the host of --broker")
    if "refused" in text.lower():
        return f"the AMQP port {where} refuses connections: is RabbitMQ listening there? (check the host and port in --broker)"
    if "timed out" in text.lower() or "timeout" in text.lower() or exc.timed_out:
        return f"the AMQP port {where} did not complete a handshake within {AMQP_BOUND_S:.0f}s ({text}): check the host and port in --broker"
    return f"the AMQP port {where} did not complete a handshake ({exc.cause}: {text})"


def _amqp_handshake(endpoint: BrokerEndpoint, vhost: str) -> None:
    # Over TLS (--tls, or --broker amqps:// with --ca-cert) the handshake verifies the broker
    # against the run's CA only, as every client of the run does.
    try:
        handshake(endpoint.host, endpoint.port, vhost, endpoint.username, endpoint.password, endpoint.ca_file,
                  AMQP_BOUND_S, "acemq-interop pre-flight")
    except HandshakeFailed as exc:
        raise BrokerError(_amqp_problem(exc, endpoint)) from None


def amqp_answers(endpoint: BrokerEndpoint) -> bool:
    """Whether an AMQP handshake on the default vhost completes now: for a node the harness
    started, the last sign of readiness. RabbitMQ 4.0 answered its management API while
    its AMQP listener still closed connections at the protocol header (EOF), and the
    run's pre-flight then took a booting broker for one that does not speak AMQP."""
    try:
        _amqp_handshake(endpoint, "/")
    except BrokerError:
        return False
    return True


def preflight(endpoint: BrokerEndpoint) -> None:
    """Raises BrokerError (one line) on the first thing that is wrong."""
    from ..core.ownership import vhost_description

    management = endpoint.management()
    try:
        management.overview()
    except ManagementError as exc:
        raise BrokerError(_api_problem(exc, endpoint, "GET /api/overview")) from None
    from .conditions import preflight_problem

    alarm = preflight_problem(management)
    if alarm is not None:
        raise BrokerError(alarm)
    scratch = f"acemq-interop-preflight-{uuid.uuid4().hex[:8]}"
    made = False
    try:
        made = True  # from the first PUT on: deleting an absent vhost is harmless
        try:
            management.create_vhost(scratch, vhost_description())
        except ManagementError as exc:
            if exc.status in (401, 403):
                raise BrokerError(f"user '{endpoint.username}' may not create vhosts (HTTP {exc.status}): the harness makes "
                                  f"a vhost per run; give the user the administrator tag "
                                  f"(rabbitmqctl set_user_tags {endpoint.username} administrator)") from None
            raise BrokerError(_api_problem(exc, endpoint, f"PUT /api/vhosts/{scratch}")) from None
        _amqp_handshake(endpoint, scratch)
        try:
            management.delete_vhost(scratch)
            made = False
        except ManagementError as exc:
            if exc.status in (401, 403):
                raise BrokerError(f"user '{endpoint.username}' may not delete vhosts (HTTP {exc.status}): the harness "
                                  "deletes its vhost at the end of a run; give the user the administrator tag") from None
            raise BrokerError(_api_problem(exc, endpoint, f"DELETE /api/vhosts/{scratch}")) from None
    finally:
        if made:
            try:
                management.delete_vhost(scratch)
            except ManagementError:
                pass  # owner-recorded: a later run's sweep removes it
