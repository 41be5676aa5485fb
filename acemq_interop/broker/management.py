"""The RabbitMQ management HTTP API: vhosts, and facts only the broker knows about queues.

What an answer means is decided per call, never by status code alone:
- a 404 is an answer ("there is none") only where the caller expects absence: a queue
  looked up, something deleted that is already gone. Anywhere else (a vhost made, a
  permission set, a listing) it is an error naming the call: a wrong --management-url or a
  proxy in the way must not look like success.
- a 5xx, a connection reset or a dropped connection is retried a bounded number of times
  with a short backoff, for idempotent calls only (GET, PUT and DELETE of one resource all
  are), then it is an error naming the call. A refused connection is not retried: the API
  is not there, and saying so at once is better than saying so later.
"""
from __future__ import annotations

import base64
import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ..core.errors import BrokerError

HTTP_BOUND_S = 10.0
RETRIES = 3  # extra attempts after the first, for a 5xx or a reset connection
BACKOFF_S = (0.2, 0.5, 1.0)
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE"})
_ABSENT = object()


class ManagementError(BrokerError):
    """The management API answered a call with an error (status is the HTTP status, 0: no answer)."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


def _transient(exc: BaseException) -> bool:
    """A reset or dropped connection: worth another try. A refused one is not."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, ConnectionRefusedError):
        return False
    return isinstance(reason, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
                               http.client.RemoteDisconnected, http.client.BadStatusLine, http.client.IncompleteRead))


class Management:
    """The API of one broker; of a cluster (`fallbacks`: the other nodes' APIs), whichever node
    answers: a node stopped or killed on purpose (a scenario's node step) refuses, and the
    same call goes to the next node, which sees the same vhosts, queues and connections."""

    def __init__(self, base_url: str, username: str, password: str, fallbacks: tuple[str, ...] = ()):
        self.base_url = base_url.rstrip("/")
        self._bases = [self.base_url, *(f.rstrip("/") for f in fallbacks)]
        self._current = 0  # the node that answered last: asked first next time
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        self._auth = f"Basic {token}"
        self.username = username

    def at_each_node(self) -> list["Management"]:
        """One client per node (a node-local setting, such as the firehose, is set on each)."""
        if len(self._bases) == 1:
            return [self]
        each = []
        for base in self._bases:
            one = Management(base, self.username, "")
            one._auth = self._auth
            each.append(one)
        return each

    def _where(self) -> str:
        from ..core.redact import url

        return url(self.base_url)

    def _call(self, method: str, path: str, body: Any = None, absent: Any = _ABSENT, retries: int = RETRIES,
              bound_s: float = HTTP_BOUND_S, headers: dict[str, str] | None = None) -> Any:
        """One call, at the node that answered last, then at each other node of a cluster
        whose API does not answer at all (an HTTP error is an answer: it is not asked again)."""
        first = self._current
        for turn in range(len(self._bases)):
            index = (first + turn) % len(self._bases)
            try:
                answer = self._call_at(self._bases[index], method, path, body, absent,
                                       retries if len(self._bases) == 1 else 0, bound_s, headers)
            except ManagementError as exc:
                if exc.status != 0 or turn == len(self._bases) - 1:
                    raise
                continue
            self._current = index
            return answer
        raise AssertionError("unreachable")

    def _call_at(self, base_url: str, method: str, path: str, body: Any = None, absent: Any = _ABSENT,
                 retries: int = RETRIES, bound_s: float = HTTP_BOUND_S, headers: dict[str, str] | None = None) -> Any:
        """One call to one API. `absent` is what a 404 returns when the caller expects absence
        (else a 404 is an error); 5xx and resets are retried for idempotent methods."""
        data = None if body is None else json.dumps(body).encode()
        attempts = 1 + (retries if method in IDEMPOTENT else 0)
        what = f"{method} {path}"
        for attempt in range(attempts):
            last = attempt == attempts - 1
            request = urllib.request.Request(base_url + path, data=data, method=method)
            request.add_header("Authorization", self._auth)
            request.add_header("content-type", "application/json")
            for key, value in (headers or {}).items():
                request.add_header(key, value)
            try:
                with urllib.request.urlopen(request, timeout=bound_s) as response:
                    raw = response.read()
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:200].decode("utf-8", "replace")
                if exc.code == 404 and absent is not _ABSENT:
                    return absent
                if exc.code >= 500 and not last:
                    time.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
                    continue
                tried = f" (after {attempt + 1} attempts)" if attempt else ""
                raise ManagementError(f"management API {what}: HTTP {exc.code}{tried} {detail}".rstrip(), exc.code) from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
                if _transient(exc) and not last:
                    time.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
                    continue
                reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                from ..core.redact import url

                raise ManagementError(f"management API at {url(base_url)} did not answer {what}: "
                                      f"{type(reason).__name__}: {reason}") from None
            try:
                return json.loads(raw) if raw else None
            except ValueError:
                raise ManagementError(f"management API {what}: the answer is not JSON "
                                      f"(is {self._where()} RabbitMQ's management API?)") from None
        raise AssertionError("unreachable")

    def ready(self) -> bool:
        """The API answers (a node starting up): polled, so no retries here."""
        try:
            return self._call("GET", "/api/overview", retries=0, bound_s=5.0) is not None
        except BrokerError:
            return False

    def overview(self) -> dict[str, Any]:
        """The broker's product and versions (product_name, product_version, erlang_version, ...)."""
        return self._call("GET", "/api/overview") or {}

    def whoami(self) -> dict[str, Any]:
        """The user the API authenticated (name, tags)."""
        return self._call("GET", "/api/whoami") or {}

    @staticmethod
    def _q(name: str) -> str:
        return urllib.parse.quote(name, safe="")

    def create_vhost(self, vhost: str, description: str = "") -> None:
        self._call("PUT", f"/api/vhosts/{self._q(vhost)}", {"description": description} if description else {})
        self._call("PUT", f"/api/permissions/{self._q(vhost)}/{self._q(self.username)}", {"configure": ".*", "write": ".*", "read": ".*"})

    def set_tracing(self, vhost: str, on: bool) -> None:
        """The vhost's firehose switch. A PUT replaces the vhost's metadata, so its
        description (the run's owner record) is sent again with it."""
        info = self._call("GET", f"/api/vhosts/{self._q(vhost)}") or {}
        self._call("PUT", f"/api/vhosts/{self._q(vhost)}", {"tracing": on, "description": info.get("description") or ""})

    def delete_vhost(self, vhost: str) -> None:
        """Gone already is as good as deleted."""
        self._call("DELETE", f"/api/vhosts/{self._q(vhost)}", absent=None)

    def vhosts(self) -> list[str]:
        return [v["name"] for v in self._call("GET", "/api/vhosts") or []]

    def vhost_records(self) -> list[dict[str, Any]]:
        """Every vhost with its description (where a run records who owns it)."""
        return list(self._call("GET", "/api/vhosts?columns=name,description") or [])

    def queue(self, vhost: str, name: str) -> dict[str, Any] | None:
        """The queue's facts, or None when the broker has no such queue."""
        info = self._call("GET", f"/api/queues/{self._q(vhost)}/{self._q(name)}", absent=None)
        if info is None:
            return None
        return {
            "name": info.get("name"),
            "type": info.get("type"),
            "durable": info.get("durable"),
            "exclusive": info.get("exclusive"),
            "auto_delete": info.get("auto_delete"),
            "arguments": info.get("arguments", {}),
            "consumers": info.get("consumers"),
        }

    def queues(self, vhost: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/api/queues/{self._q(vhost)}?columns=name,type,exclusive,auto_delete,durable") or []

    def nodes(self) -> list[dict[str, Any]]:
        """The cluster's nodes: `name` and whether it is `running`."""
        return list(self._call("GET", "/api/nodes?columns=name,running") or [])

    def quorum_members(self, vhost: str) -> list[dict[str, Any]]:
        """The vhost's quorum queues: `name`, `members` and `online` (node names)."""
        rows = self._call("GET", f"/api/queues/{self._q(vhost)}?columns=name,type,members,online") or []
        return [r for r in rows if r.get("type") == "quorum"]

    def queue_node(self, vhost: str, name: str) -> str | None:
        """The node a queue lives on: a quorum queue's leader, a classic queue's node."""
        info = self._call("GET", f"/api/queues/{self._q(vhost)}/{self._q(name)}", absent=None) or {}
        return info.get("leader") or info.get("node")

    def messages(self, vhost: str, name: str, count: int = 100) -> list[dict[str, Any]]:
        """Up to `count` messages of a queue, left in it (requeued): each `properties` and `payload`."""
        rows = self._call("POST", f"/api/queues/{self._q(vhost)}/{self._q(name)}/get",
                          {"count": count, "ackmode": "ack_requeue_true", "encoding": "auto", "truncate": 50000}, absent=None)
        return list(rows or [])

    def delete_queue(self, vhost: str, name: str) -> None:
        self._call("DELETE", f"/api/queues/{self._q(vhost)}/{self._q(name)}", absent=None)

    def exchanges(self, vhost: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/api/exchanges/{self._q(vhost)}?columns=name") or []

    def delete_exchange(self, vhost: str, name: str) -> None:
        self._call("DELETE", f"/api/exchanges/{self._q(vhost)}/{self._q(name)}", absent=None)

    # -- connections and consumers (RR-20: ending one role's connection, seeing it back) --

    def connections(self, vhost: str, bound_s: float = HTTP_BOUND_S) -> list[dict[str, Any]]:
        """The vhost's connections: `name` (the broker's, "127.0.0.1:5xxxx -> ..."), `state`,
        `peer_port` (the client's end), and `connection_name`, the client-provided name (client
        property), or None."""
        rows = self._call("GET", f"/api/vhosts/{self._q(vhost)}/connections?columns=name,state,client_properties,peer_port",
                          bound_s=bound_s) or []
        return [{"name": row.get("name"), "state": row.get("state"), "peer_port": row.get("peer_port"),
                 "connection_name": (row.get("client_properties") or {}).get("connection_name")} for row in rows]

    def consumers(self, vhost: str, bound_s: float = HTTP_BOUND_S) -> list[dict[str, Any]]:
        """The vhost's consumers: `queue` and the broker's `connection` name of its channel."""
        rows = self._call("GET", f"/api/consumers/{self._q(vhost)}", bound_s=bound_s) or []
        return [{"queue": (row.get("queue") or {}).get("name"),
                 "connection": (row.get("channel_details") or {}).get("connection_name")} for row in rows]

    def close_connection(self, name: str, reason: str) -> None:
        """Closes a connection as an operator does in the UI (the client reads 320
        CONNECTION_FORCED with `reason`); one already gone is as good as closed."""
        self._call("DELETE", f"/api/connections/{self._q(name)}", absent=None, headers={"X-Reason": reason})
