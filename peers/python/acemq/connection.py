"""One pika connection driven by its own I/O thread.

pika is not thread-safe: everything that touches the connection or its
channels runs on the I/O thread. Other threads hand work over with
``call`` (wait for the result) or ``submit`` (fire and forget), both built on
``add_callback_threadsafe``, the one thread-safe method of BlockingConnection.

Where to connect is a ``Broker``: an AMQP URL, or pika connection parameters for what a
URL cannot say (TLS with a CA of the service's own: ``tls_parameters``).
"""

from __future__ import annotations

import copy
import functools
import logging
import os
import ssl
import threading
from concurrent.futures import Future
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar, Union

import pika
from pika import exceptions as px
from pika.adapters.blocking_connection import BlockingChannel

from .errors import AcemqError

T = TypeVar("T")
log = logging.getLogger("acemq.connection")

# Where a Requester or Responder connects: an ``amqp://`` / ``amqps://`` URL, or pika's
# connection parameters (``pika.ConnectionParameters``, ``pika.URLParameters``), with
# ``ssl_options`` for TLS.
Broker = Union[str, pika.connection.Parameters]
# One broker, or a cluster's nodes in the order they are tried (the preferred one first).
Brokers = Union[Broker, Sequence[Broker]]


def broker_list(brokers: Brokers) -> list[Broker]:
    """``brokers`` as a non-empty list of nodes (one URL or parameters is a list of one)."""
    if isinstance(brokers, (str, pika.connection.Parameters)):
        return [brokers]
    nodes = list(brokers)
    if not nodes:
        raise ValueError("no broker to connect to: give a URL or a list of them")
    return nodes


def tls_parameters(url: str, ca_file: Union[str, "os.PathLike[str]"]) -> pika.URLParameters:
    """pika parameters for an ``amqps://`` URL that trust only ``ca_file`` (PEM).

    The broker's certificate chain is verified against that CA and its name against the
    URL's host (pika's plain ``amqps://`` trusts the system's CAs instead). No client
    certificate: add one with ``context.load_cert_chain`` on ``params.ssl_options.context``.
    """
    params = pika.URLParameters(url)
    context = ssl.create_default_context(cafile=os.fspath(ca_file))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    params.ssl_options = pika.SSLOptions(context, server_hostname=params.host)
    return params


def connection_parameters(broker: Broker, connection_name: Optional[str] = None) -> pika.connection.Parameters:
    """pika's parameters for one connection to ``broker`` (a URL is parsed), carrying
    ``connection_name`` as the client-provided name the management UI shows.

    Given parameters are copied: pika's Connection sets ``ssl_options`` of the object it is
    given to None for a moment (to deep-copy the rest), so two connections opened at once
    from one shared object could race, and one of them go out without TLS.
    """
    params = copy.copy(broker) if isinstance(broker, pika.connection.Parameters) else pika.URLParameters(broker)
    if connection_name is not None:
        # pika adds these to its own client properties (product, capabilities...).
        params.client_properties = {**(params.client_properties or {}), "connection_name": connection_name}
    return params

# The loop wakes at least this often to notice close(); threadsafe callbacks wake it at once.
_POLL_SECONDS = 0.5
# A call into the I/O thread that takes longer than this means the connection is stuck.
CALL_TIMEOUT_SECONDS = 30.0
# Reconnecting after a lost connection (pika has no recovery of its own): the first attempt
# after this, then twice as long each time, never more than RETRY_MAX_SECONDS between two.
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 5.0


def retry_delays(first: float = RETRY_FIRST_SECONDS, most: float = RETRY_MAX_SECONDS) -> "Iterator[float]":
    """The waits before each reconnection attempt: bounded backoff, forever."""
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, most)


class ConnectionFailed(AcemqError):
    """The connection could not be opened, or closed while work was pending on it."""


def lost_reason(cause: BaseException) -> str:
    """pika's text for a closed connection or channel: the AMQP code and text when it has them."""
    code, text = getattr(cause, "reply_code", None), getattr(cause, "reply_text", None)
    if code is not None and text:
        return f"{code} {text}"
    return f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__


class ConnectionThread:
    """A BlockingConnection and its I/O thread; optionally, its recovery.

    With ``recover`` set, a connection the broker or the network ends is opened again on
    the same thread, under the same ``connection_name``, trying the nodes in order from the
    one after the lost node, with bounded backoff (``retry_delays``), until it is back or
    ``close`` is called. ``on_recovered`` then runs on the I/O thread (the owner declares
    and consumes again); if it fails, the new connection is closed and tried again.
    """

    def __init__(self, broker: Brokers, name: str, connection_name: Optional[str] = None) -> None:
        self._nodes = broker_list(broker)
        self._node = 0  # the node of the current connection
        self._connection_name = connection_name
        self._ready: Future[None] = Future()
        self._closing = threading.Event()
        self._pending: set[Future[Any]] = set()
        self._pending_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.connection: Optional[pika.BlockingConnection] = None
        # Told once per connection, with pika's text, when the broker or the network ends
        # it or a watched channel; never when this side closes them. ``recovering`` says,
        # while it runs, whether a recovery follows.
        self.on_lost: Optional[Callable[[str], None]] = None
        self._lost_reported = False
        self.recover = False  # set by the owner before start
        self.recovering = False
        self.on_recovered: Optional[Callable[[], None]] = None

    def start(self, timeout: float = CALL_TIMEOUT_SECONDS) -> None:
        self._thread.start()
        self._ready.result(timeout)

    @property
    def in_io_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def watch(self, channel: BlockingChannel) -> None:
        """Report the broker closing ``channel`` through ``on_lost``. I/O thread only.

        BlockingChannel offers no close callback of its own (it raises on the next
        call instead), so the callback goes on the channel underneath it.
        """
        channel._impl.add_on_close_callback(self._channel_closed)

    def _channel_closed(self, _channel: Any, reason: BaseException) -> None:
        if isinstance(reason, px.ChannelClosedByBroker) and not self._closing.is_set():
            self._report_lost(reason)

    def _report_lost(self, cause: BaseException) -> None:
        if self._lost_reported or self.on_lost is None:
            return
        self._lost_reported = True
        try:
            self.on_lost(lost_reason(cause))
        except Exception:
            log.exception("on_lost failed")

    def call(self, fn: Callable[..., T], *args: Any, timeout: float = CALL_TIMEOUT_SECONDS) -> T:
        """Run ``fn(*args)`` on the I/O thread and return its result (or raise its error)."""
        if self.in_io_thread:
            return fn(*args)
        return self._schedule(fn, *args).result(timeout)

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run ``fn(*args)`` on the I/O thread without waiting; errors are logged. False when
        the connection is closed (or lost and not back yet): the work is dropped."""
        if self.in_io_thread:
            self._guarded(fn, *args)
            return True
        try:
            self._schedule(self._guarded, fn, *args)
        except ConnectionFailed as exc:
            log.warning("dropped work for a closed connection: %s", exc)
            return False
        return True

    def later(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the I/O thread once the current callback is over. I/O thread only.

        For work that must not run inside pika's frame handling (a confirm's callback,
        say), because it calls the blocking channels: pika dispatches the timer at the
        top of ``process_data_events``. Errors are logged.
        """
        assert self.connection is not None
        if not self.connection.is_open:
            # Closing or lost: no timer of it runs any more, and the blocking channels it would
            # spare are gone too (the work finds them closed).
            self._guarded(fn, *args)
            return
        self.connection.call_later(0, functools.partial(self._guarded, fn, *args))

    def call_later(self, seconds: float, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the I/O thread after ``seconds``, from any thread."""
        timer = threading.Timer(seconds, self.submit, args=(fn,))
        timer.daemon = True
        timer.start()

    def close(self, timeout: float = 10.0) -> None:
        self._closing.set()
        if self.connection is not None and not self.in_io_thread:
            try:
                self.connection.add_callback_threadsafe(lambda: None)
            except Exception:  # already closed: the loop ends by itself
                pass
        if not self.in_io_thread:
            self._thread.join(timeout)

    def _guarded(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("error in I/O thread work")

    def _schedule(self, fn: Callable[..., T], *args: Any) -> "Future[T]":
        future: Future[T] = Future()

        def run() -> None:
            with self._pending_lock:
                self._pending.discard(future)
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to the waiting caller
                future.set_exception(exc)

        with self._pending_lock:
            if self._closing.is_set() or self.connection is None:
                raise ConnectionFailed("connection is closed")
            self._pending.add(future)
        try:
            # Raises on a closed connection: between a loss and the recovery, work is refused.
            self.connection.add_callback_threadsafe(run)
        except Exception as exc:
            with self._pending_lock:
                self._pending.discard(future)
            raise ConnectionFailed(f"connection is closed: {exc}") from exc
        return future

    def _open(self, index: int) -> pika.BlockingConnection:
        """A connection to node ``index``, under the connection name."""
        params = connection_parameters(self._nodes[index], self._connection_name)
        where = f"{params.host}:{params.port} (vhost {params.virtual_host!r})"
        try:
            return pika.BlockingConnection(params)
        except BaseException as exc:
            raise ConnectionFailed(f"cannot connect to {where}: {exc!r}") from exc

    def _run(self) -> None:
        # The first connection: the first node that takes it, in the order given.
        failures: list[str] = []
        for index in range(len(self._nodes)):
            try:
                self.connection, self._node = self._open(index), index
                break
            except ConnectionFailed as exc:
                failures.append(str(exc))
            except BaseException as exc:
                failures.append(f"not a usable AMQP URL: {exc!r}")
        if self.connection is None:
            self._ready.set_exception(ConnectionFailed("; ".join(failures)))
            return
        self._ready.set_result(None)
        try:
            while True:
                lost = self._serve()
                if lost is None:
                    return  # closed by its owner
                self.recovering = self.recover
                self._report_lost(lost)
                if not self.recover or not self._recover():
                    return
        finally:
            self._closing.set()
            self._fail_pending(None)

    def _serve(self) -> Optional[BaseException]:
        """Run the connection until its owner closes it (None) or it is lost (the cause)."""
        assert self.connection is not None
        lost: Optional[BaseException] = None
        try:
            while not self._closing.is_set():
                self.connection.process_data_events(time_limit=_POLL_SECONDS)
        except BaseException as exc:
            lost = exc
            log.warning("connection lost: %r", exc)
        self._fail_pending(lost)
        if self.connection.is_open:
            try:
                self.connection.close()
            except Exception:
                log.debug("error closing connection", exc_info=True)
        return None if self._closing.is_set() else lost

    def _recover(self) -> bool:
        """Reconnect and let the owner set up again; False once the owner closes first."""
        index = self._node
        for delay in retry_delays():
            if self._closing.wait(delay):
                return False
            index = (index + 1) % len(self._nodes)  # round robin from the node after the lost one
            try:
                connection = self._open(index)
            except ConnectionFailed as exc:
                log.info("reconnecting: %s", exc)
                continue
            self.connection, self._node, self._lost_reported = connection, index, False
            try:
                if self.on_recovered is not None:
                    self.on_recovered()
            except Exception as exc:
                log.warning("set-up after reconnecting failed, trying again: %r", exc)
                try:
                    connection.close()
                except Exception:
                    log.debug("error closing connection", exc_info=True)
                continue
            self.recovering = False
            log.info("connection recovered on node %d", index)
            return True
        return False

    def _fail_pending(self, cause: Optional[BaseException]) -> None:
        with self._pending_lock:
            pending, self._pending = self._pending, set()
        for future in pending:
            if future.set_running_or_notify_cancel():
                future.set_exception(ConnectionFailed(f"connection closed: {cause!r}"))
