"""The RabbitMQ management HTTP API: vhosts, and facts only the broker knows about queues."""
from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .errors import BrokerError

HTTP_BOUND_S = 10.0


class Management:
    def __init__(self, base_url: str, username: str, password: str):
        self.base_url = base_url.rstrip("/")
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        self._auth = f"Basic {token}"
        self.username = username

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Authorization", self._auth)
        request.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=HTTP_BOUND_S) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise BrokerError(f"management API {method} {path}: HTTP {exc.code} {exc.read()[:200]!r}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise BrokerError(f"management API at {self.base_url} did not answer {method} {path}: {exc}") from exc
        return json.loads(raw) if raw else None

    def ready(self) -> bool:
        try:
            return self._call("GET", "/api/overview") is not None
        except BrokerError:
            return False

    def overview(self) -> dict[str, Any] | None:
        """/api/overview: product_name, product_version (rabbitmq_version before 3.8), erlang_version."""
        return self._call("GET", "/api/overview")

    @staticmethod
    def _q(name: str) -> str:
        return urllib.parse.quote(name, safe="")

    def create_vhost(self, vhost: str) -> None:
        self._call("PUT", f"/api/vhosts/{self._q(vhost)}", {})
        self._call("PUT", f"/api/permissions/{self._q(vhost)}/{self._q(self.username)}", {"configure": ".*", "write": ".*", "read": ".*"})

    def delete_vhost(self, vhost: str) -> None:
        self._call("DELETE", f"/api/vhosts/{self._q(vhost)}")

    def vhosts(self) -> list[str]:
        return [v["name"] for v in self._call("GET", "/api/vhosts") or []]

    def queue(self, vhost: str, name: str) -> dict[str, Any] | None:
        """The queue's facts, or None when the broker has no such queue."""
        info = self._call("GET", f"/api/queues/{self._q(vhost)}/{self._q(name)}")
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

    def delete_queue(self, vhost: str, name: str) -> None:
        self._call("DELETE", f"/api/queues/{self._q(vhost)}/{self._q(name)}")

    def exchanges(self, vhost: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/api/exchanges/{self._q(vhost)}?columns=name") or []

    def delete_exchange(self, vhost: str, name: str) -> None:
        self._call("DELETE", f"/api/exchanges/{self._q(vhost)}/{self._q(name)}")
