"""Holding one queue on a broker the harness runs: a publish routed to it is taken but not
confirmed until the queue is released.

The only way RabbitMQ offers to hold a publisher confirm back for one queue, and nothing
else, is to suspend that queue's process (`sys:suspend/1`, through `rabbitmqctl eval` on the
node): the channel routes the message and waits for the queue's answer before it confirms.
Every other queue, connection and cell goes on. This needs the node's CLI, so only a
private node or a broker container offers it; on a broker given by URL a scenario that
needs it is a SKIP that says so.
"""
from __future__ import annotations

import subprocess
from typing import Callable, Protocol

from .errors import BrokerError

CTL_BOUND_S = 30.0
NOT_HERE = ("needs broker control (rabbitmqctl eval on the broker's node, to hold a queue's confirms): "
            "a private node or a --broker-image container offers it, a --broker URL does not")


class BrokerControl(Protocol):
    def hold(self, vhost: str, queue: str) -> None: ...

    def release(self, vhost: str, queue: str) -> None: ...


def _erlang_binary(text: str) -> str:
    return "<<\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"/utf8>>"


def _suspend_expr(vhost: str, queue: str, call: str) -> str:
    return (f"case rabbit_amqqueue:lookup(rabbit_misc:r({_erlang_binary(vhost)}, queue, {_erlang_binary(queue)})) of "
            f"{{ok, Q}} -> sys:{call}(amqqueue:get_pid(Q)), ok; _ -> not_found end.")


class CtlControl:
    """Holds queues through a `rabbitmqctl` argv (the private node's, or `docker exec` into a container)."""

    def __init__(self, ctl: list[str], env: dict[str, str] | None = None,
                 run: Callable[..., subprocess.CompletedProcess] = subprocess.run):
        self._ctl, self._env, self._run = ctl, env, run

    def _eval(self, expr: str, what: str) -> None:
        try:
            done = self._run([*self._ctl, "eval", expr], env=self._env, capture_output=True, text=True,
                             timeout=CTL_BOUND_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BrokerError(f"{what}: rabbitmqctl eval did not answer: {exc}") from exc
        out = (done.stdout or "").strip()
        if done.returncode != 0 or out != "ok":
            raise BrokerError(f"{what}: rabbitmqctl eval answered {out or (done.stderr or '').strip()[-300:]!r}")

    def hold(self, vhost: str, queue: str) -> None:
        self._eval(_suspend_expr(vhost, queue, "suspend"), f"holding queue {queue}")

    def release(self, vhost: str, queue: str) -> None:
        self._eval(_suspend_expr(vhost, queue, "resume"), f"releasing queue {queue}")
