"""The broker's CLI, as the harness drives it to hold a queue (broker/control.py): one
`rabbitmqctl eval` at a time per broker, and a CLI that does not answer is a BrokerError that
names the command and its bound, not the whole Erlang expression. Pure logic: the CLI is a
function here; holding a real queue is tests/broker/test_broker_control.py's."""
from __future__ import annotations

import subprocess
import threading
import time

import pytest

from acemq_interop.broker import control
from acemq_interop.broker.control import CtlControl
from acemq_interop.core.errors import BrokerError


class SlowCtl:
    """A `rabbitmqctl` that takes `took_s` to answer `ok`, counting how many run at once."""

    def __init__(self, took_s: float) -> None:
        self.took_s, self.now, self.most = took_s, 0, 0
        self._lock = threading.Lock()

    def __call__(self, argv, **kwargs) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.took_s)
        with self._lock:
            self.now -= 1
        return subprocess.CompletedProcess(argv, 0, stdout="ok\n", stderr="")


def test_six_cells_holding_at_once_run_the_cli_one_at_a_time() -> None:
    ctl = SlowCtl(0.05)
    holder = CtlControl(["docker", "exec", "b", "rabbitmqctl"], run=ctl)
    threads = [threading.Thread(target=holder.hold, args=("v", f"c{i}.inbox", f"c{i}.key")) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert ctl.most == 1


def test_a_cli_that_does_not_answer_is_a_broker_error_naming_the_command_and_its_bound() -> None:
    def hangs(argv, **kwargs):  # type: ignore[no-untyped-def]
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])

    holder = CtlControl(["docker", "exec", "b", "rabbitmqctl"], run=hangs)
    with pytest.raises(BrokerError) as raised:
        holder.hold("v", "c1.inbox", "c1.key")
    assert str(raised.value) == (f"holding queue c1.inbox: `docker exec b rabbitmqctl eval` did not answer within "
                                 f"{control.CTL_BOUND_S:.0f}s")
    holder._run = SlowCtl(0)  # the turn was given back: the next hold runs
    holder.hold("v", "c2.inbox", "c2.key")


def test_a_cell_that_never_gets_its_turn_is_a_broker_error(monkeypatch) -> None:
    monkeypatch.setattr(control, "TURN_BOUND_S", 0.1)
    ctl = SlowCtl(0.5)
    holder = CtlControl(["rabbitmqctl"], run=ctl)
    first = threading.Thread(target=holder.hold, args=("v", "c1.inbox", "c1.key"))
    first.start()
    deadline = time.monotonic() + 5
    while ctl.now == 0 and time.monotonic() < deadline:  # until the first hold's CLI runs
        time.sleep(0.001)
    assert ctl.now == 1
    with pytest.raises(BrokerError, match="kept the broker's CLI busy for 0s"):
        holder.hold("v", "c2.inbox", "c2.key")
    first.join(5)


def test_the_leadership_move_expression_names_the_queue_and_the_node_quoted() -> None:
    expr = control.move_leader_expr("acemq-interop-1", 'c0001."q"', "acemq-interop-abc@localhost")
    assert 'rabbit_misc:r(<<"acemq-interop-1"/utf8>>, queue, <<"c0001.\\"q\\""/utf8>>)' in expr
    assert "rabbit_quorum_queue:transfer_leadership(Q, 'acemq-interop-abc@localhost')" in expr
    assert expr.endswith("_ -> not_found end.")


def test_eval_returns_what_the_cli_printed_and_a_failed_cli_is_a_broker_error_with_its_output() -> None:
    def answers(argv, **kwargs):  # type: ignore[no-untyped-def]
        return subprocess.CompletedProcess(argv, 0, stdout="{migrated,'n@localhost'}\n", stderr="")

    assert CtlControl(["rabbitmqctl"], run=answers).eval("x.", "moving") == "{migrated,'n@localhost'}"

    def fails(argv, **kwargs):  # type: ignore[no-untyped-def]
        return subprocess.CompletedProcess(argv, 2, stdout="", stderr="Error: unable to perform an operation on node\n")

    with pytest.raises(BrokerError, match=r"^moving: rabbitmqctl eval answered 'Error: unable to perform an operation on node'$"):
        CtlControl(["rabbitmqctl"], run=fails).eval("x.", "moving")
    with pytest.raises(BrokerError, match=r"^holding queue q: rabbitmqctl eval answered 'not_found'$"):
        CtlControl(["rabbitmqctl"], run=lambda argv, **kw: subprocess.CompletedProcess(argv, 0, stdout="not_found\n", stderr="")).hold("v", "q", "k")
