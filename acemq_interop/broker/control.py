"""Holding one queue on a broker the harness runs: a publish routed to it is taken but not
confirmed until the queue is released.

The only way RabbitMQ offers to hold a publisher confirm back for one queue, and nothing
else, is to suspend that queue's process (`sys:suspend/1`, through `rabbitmqctl eval` on the
node): the channel routes the message and waits for the queue's answer before it confirms.
Every other queue, connection and cell goes on. This needs the node's CLI, so only a
private node or a broker container offers it; on a broker given by URL a scenario that
needs it is a SKIP that says so.

A hold is bounded on the broker, and released without the CLI. `rabbitmqctl eval` starts
an Erlang VM, a second on a quiet machine and ten on a loaded one (several cells holding at
once on 2 cores): a release through it stretched a hold past a binding's own confirm wait
(10 s in the Java binding), and that binding then took its reply as undeliverable, which
the cell read as a wrong count. So the suspend is done by a guardian process on the node,
which resumes the queue the moment a *key* queue is gone, or when HOLD_BOUND_MS elapses,
whichever comes first. The key is an exclusive queue the cell's probe declares: the release
is one `queue.delete` on the probe's connection (milliseconds), and a cell, a probe or a
harness that dies mid-hold releases it too, since an exclusive queue dies with its
connection. The CLI is only on the way in, before anything is published to the queue.
"""
from __future__ import annotations

import subprocess
import threading
import time
from typing import Callable, Protocol

from ..core.errors import BrokerError

CTL_BOUND_S = 30.0
# One `rabbitmqctl eval` at a time per broker: each starts an Erlang VM, and six at once (the
# six responders' cells of one held scenario, started together) in a broker container on a
# loaded 2-core machine did not answer within CTL_BOUND_S (CI, RabbitMQ 4.0.5). A cell waits
# its turn before anything is held or published, so the wait changes no verdict.
TURN_BOUND_S = 180.0
# Longer than any step a held scenario takes (a counters read bounded at 2 s), shorter than
# a binding's confirm wait is expected to be (the suite's bindings wait 10 s to 30 s).
HOLD_BOUND_MS = 6000
# A hold that lasted this long may have run out on the broker before its steps were done:
# no verdict is drawn from it (HeldQueue.released).
HOLD_TRUSTED_MS = HOLD_BOUND_MS - 1000
NOT_HERE = ("needs broker control (rabbitmqctl eval on the broker's node, to hold a queue's confirms): "
            "a private node or a --broker-image container offers it, a --broker URL does not")


class BrokerControl(Protocol):
    def hold(self, vhost: str, queue: str, key: str) -> None:
        """Suspends `queue` until the queue `key` (same vhost) is gone, or HOLD_BOUND_MS elapses."""
        ...


def _erlang_binary(text: str) -> str:
    return "<<\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"/utf8>>"


def hold_expr(vhost: str, queue: str, key: str, bound_ms: int = HOLD_BOUND_MS) -> str:
    """The `rabbitmqctl eval` expression: `ok` once `queue` is suspended by a guardian that
    monitors `key`'s process; `not_found` when either queue is not there."""
    def lookup(name: str) -> str:
        return f"rabbit_amqqueue:lookup(rabbit_misc:r({_erlang_binary(vhost)}, queue, {_erlang_binary(name)}))"

    return (
        f"Caller = self(), "
        f"case {{{lookup(queue)}, {lookup(key)}}} of "
        f"{{{{ok, Held}}, {{ok, Key}}}} -> "
        f"  Pid = amqqueue:get_pid(Held), KeyPid = amqqueue:get_pid(Key), "
        f"  spawn(fun() -> "
        f"    Watch = erlang:monitor(process, KeyPid), "
        f"    sys:suspend(Pid), Caller ! {{held, Pid}}, "
        f"    receive {{'DOWN', Watch, process, _, _}} -> ok after {int(bound_ms)} -> ok end, "
        f"    sys:resume(Pid) "
        f"  end), "
        f"  receive {{held, Pid}} -> ok after 10000 -> suspend_timeout end; "
        f"_ -> not_found "
        f"end."
    )


def move_leader_expr(vhost: str, queue: str, node: str) -> str:
    """The `rabbitmqctl eval` expression moving quorum queue `queue`'s leadership to `node`
    (what maintenance mode does to a drained node's queues): `{migrated, Node}`,
    `{not_migrated, Reason}`, or `not_found`."""
    return (f"case rabbit_amqqueue:lookup(rabbit_misc:r({_erlang_binary(vhost)}, queue, {_erlang_binary(queue)})) of "
            f"{{ok, Q}} -> rabbit_quorum_queue:transfer_leadership(Q, '{node}'); "
            f"_ -> not_found end.")


class CtlControl:
    """Holds queues through a `rabbitmqctl` argv (the private node's, or `docker exec` into a container)."""

    def __init__(self, ctl: list[str], env: dict[str, str] | None = None,
                 run: Callable[..., subprocess.CompletedProcess] = subprocess.run, bound_ms: int = HOLD_BOUND_MS):
        self._ctl, self._env, self._run, self.bound_ms = ctl, env, run, bound_ms
        self._turn = threading.Lock()

    def hold(self, vhost: str, queue: str, key: str) -> None:
        what = f"holding queue {queue}"
        out = self.eval(hold_expr(vhost, queue, key, self.bound_ms), what)
        if out != "ok":
            raise BrokerError(f"{what}: rabbitmqctl eval answered {out!r}")

    def eval(self, expr: str, what: str) -> str:
        """`rabbitmqctl eval EXPR` (one at a time per broker, bounded): what it printed."""
        if not self._turn.acquire(timeout=TURN_BOUND_S):
            raise BrokerError(f"{what}: other cells' rabbitmqctl evals kept the broker's CLI busy for {TURN_BOUND_S:.0f}s")
        try:
            done = self._run([*self._ctl, "eval", expr], env=self._env,
                             capture_output=True, text=True, timeout=CTL_BOUND_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise BrokerError(f"{what}: `{' '.join(self._ctl)} eval` did not answer within {CTL_BOUND_S:.0f}s") from exc
        except OSError as exc:
            raise BrokerError(f"{what}: `{' '.join(self._ctl)} eval` could not start: {exc}") from exc
        finally:
            self._turn.release()
        if done.returncode != 0:
            raise BrokerError(f"{what}: rabbitmqctl eval answered {((done.stdout or '') + (done.stderr or '')).strip()[-300:]!r}")
        return (done.stdout or "").strip()


class HeldQueue:
    """One queue a cell holds: its key queue, and when the hold began (harness clock)."""

    def __init__(self, queue: str, key: str, since: float | None = None):
        self.queue, self.key = queue, key
        self.since = time.monotonic() if since is None else since

    def lasted_ms(self, now: float | None = None) -> float:
        return ((time.monotonic() if now is None else now) - self.since) * 1000

    def trusted_until(self) -> float:
        """The instant (harness clock) after which the hold may have run out on the broker."""
        return self.since + HOLD_TRUSTED_MS / 1000

    def untrusted(self, now: float | None = None) -> str | None:
        """Why what the cell saw while holding is no verdict (the hold may have run out on the
        broker before its steps were done), or None."""
        lasted = self.lasted_ms(now)
        if lasted < HOLD_TRUSTED_MS:
            return None
        return (f"the hold on queue {self.queue} lasted {lasted:.0f} ms, near or past its {HOLD_BOUND_MS} ms bound "
                f"on the broker: what the cell saw while holding may not have been held, so it is no verdict "
                f"(the machine is too loaded for this scenario: a lower --concurrency gives one)")
