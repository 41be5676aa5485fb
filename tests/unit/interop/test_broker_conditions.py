"""Broker conditions (broker_conditions.py): the spans of alarms and blocked connections,
the words a cell gets, the looks at a (fake) management API, and the engine's use of them.

Pure: no broker. The same on a real node: tests/broker/test_faults_broker.py
(test_a_memory_alarm_*).
"""
from __future__ import annotations

import threading
import time

import pytest

from acemq_interop.broker.conditions import (BrokerConditions, ConditionLog, alarms_of, blocked_of, describe,
                                             preflight_problem, _with_query)
from acemq_interop.broker.watch import BrokerWatch
from acemq_interop.broker.endpoint import loopback_endpoint
from acemq_interop.run.engine import run_cell
from acemq_interop.broker.management import ManagementError
from acemq_interop.results.model import Status
from fake_peers import FakeBroker, FakePeer
from test_engine_in_memory import ROUND_TRIP, context, pair_cell

NODE = "rabbit@host"
MEM = {f"alarm:memory:{NODE}": f"broker alarm: memory (publishers blocked) on {NODE}"}
DISK = {f"alarm:disk:{NODE}": f"broker alarm: disk (publishers blocked) on {NODE}"}


# -- the spans --------------------------------------------------------------------------


def test_an_alarm_raised_during_the_cell_is_named_with_when() -> None:
    log = ConditionLog()
    log.observe(100.0, {})
    log.observe(103.2, MEM)
    assert describe(log.held_since(100.0), 100.0) == f"broker alarm: memory (publishers blocked) on {NODE} since 3.2s into the cell"


def test_an_alarm_raised_before_the_cell_and_still_held_counts() -> None:
    log = ConditionLog()
    log.observe(90.0, {})
    log.observe(95.0, MEM)
    log.observe(101.0, MEM)
    assert describe(log.held_since(100.0), 100.0).endswith("since 5.0s before the cell started")


def test_an_alarm_already_raised_at_the_first_look_says_so() -> None:
    log = ConditionLog()
    news = log.observe(10.0, MEM)
    assert news == [f"raised: {MEM[next(iter(MEM))]} (already when the run started)"]
    assert describe(log.held_since(50.0), 50.0).endswith("since before the run started")


def test_an_alarm_cleared_before_the_cell_started_is_not_the_cells() -> None:
    log = ConditionLog()
    log.observe(1.0, {})
    log.observe(2.0, MEM)
    assert log.observe(3.0, {}) == [f"cleared: {MEM[next(iter(MEM))]}"]
    assert log.held_since(3.5) == [] and describe(log.held_since(3.5), 3.5) is None


def test_an_alarm_cleared_during_the_cell_still_voids_it_and_says_when() -> None:
    log = ConditionLog()
    log.observe(1.0, {})
    log.observe(2.0, MEM)
    log.observe(6.5, {})
    assert describe(log.held_since(4.0), 4.0) == (f"broker alarm: memory (publishers blocked) on {NODE} "
                                                   "since 2.0s before the cell started, cleared 2.5s into the cell")


def test_the_end_of_a_span_is_the_look_that_saw_it_gone_so_a_span_never_claims_less() -> None:
    log = ConditionLog()
    log.observe(1.0, {})
    log.observe(2.0, MEM)
    log.observe(3.0, {})
    assert log.held_since(3.0), "a cell starting at the look that saw it gone may still have been under it"


def test_raised_again_is_a_second_span() -> None:
    log = ConditionLog()
    for now, held in ((1.0, {}), (2.0, MEM), (3.0, {}), (8.0, MEM)):
        log.observe(now, held)
    assert [(s.start, s.end) for s in log.held_since(0.0)] == [(2.0, 3.0), (8.0, None)]
    assert [(s.start, s.end) for s in log.held_since(5.0)] == [(8.0, None)]


def test_two_alarms_are_both_named_in_the_order_raised() -> None:
    log = ConditionLog()
    log.observe(1.0, {})
    log.observe(2.0, DISK)
    log.observe(3.0, {**DISK, **MEM})
    text = describe(log.held_since(1.5), 1.5)
    assert text.index("disk") < text.index("memory") and text.count("broker alarm:") == 2 and "; " in text


def test_blocked_connections_are_named_only_when_no_alarm_explains_them() -> None:
    log = ConditionLog()
    log.observe(1.0, {})
    log.observe(2.0, {"blocked:c1": "'acemq-python requester'", "blocked:c2": "'acemq-go responder'"})
    assert describe(log.held_since(1.0), 1.0) == ("broker blocked the run's 2 connections ('acemq-python requester', "
                                                   "'acemq-go responder'): publishers blocked since 1.0s into the cell")
    log.observe(3.0, {**MEM, "blocked:c1": "'acemq-python requester'"})
    text = describe(log.held_since(1.0), 1.0)
    assert text.startswith("broker alarm: memory") and "connections" not in text


def test_a_look_that_saw_nothing_ever_is_no_cause() -> None:
    log = ConditionLog()
    log.observe(1.0, {})
    log.observe(2.0, {})
    assert describe(log.held_since(0.0), 0.0) is None


def test_the_api_rows_become_conditions() -> None:
    rows = [{"name": "rabbit@a", "mem_alarm": True, "disk_free_alarm": False},
            {"name": "rabbit@b", "mem_alarm": False, "disk_free_alarm": True},
            {"name": "rabbit@c", "mem_alarm": False, "disk_free_alarm": False}, {"name": "rabbit@d"}]
    assert alarms_of(rows) == {"alarm:memory:rabbit@a": "broker alarm: memory (publishers blocked) on rabbit@a",
                               "alarm:disk:rabbit@b": "broker alarm: disk (publishers blocked) on rabbit@b"}
    conns = [{"name": "1 -> 2", "state": "blocked", "client_properties": {"connection_name": "acemq probe"}},
             {"name": "3 -> 4", "state": "blocking", "client_properties": {}},
             {"name": "5 -> 6", "state": "running"}, {"name": "7 -> 8", "state": "flow"}]
    assert blocked_of(conns) == {"blocked:1 -> 2": "'acemq probe'", "blocked:3 -> 4": "3 -> 4"}


def test_the_probe_url_gets_its_blocked_bound_without_losing_its_own_query() -> None:
    assert _with_query("amqp://u:p@h:1/v", blocked_connection_timeout="20") == "amqp://u:p@h:1/v?blocked_connection_timeout=20"
    assert _with_query("amqp://u:p@h:1/v?heartbeat=5", blocked_connection_timeout="20").endswith("?heartbeat=5&blocked_connection_timeout=20")
    assert _with_query("amqp://h/v?blocked_connection_timeout=3", blocked_connection_timeout="20").endswith("=3"), "the caller's own wins"


# -- the looks, on a fake management API ------------------------------------------------


class FakeManagement:
    def __init__(self, nodes: list | None = None, connections: list | None = None, status: int | None = None):
        self.nodes = nodes if nodes is not None else [{"name": NODE, "mem_alarm": False, "disk_free_alarm": False}]
        self.connections = connections or []
        self.status = status  # a ManagementError on /api/nodes with this status
        self.calls: list[str] = []

    def _call(self, method: str, path: str, retries: int = 3, bound_s: float = 10.0, **kwargs):
        self.calls.append(path)
        assert retries == 0 and bound_s <= 10.0, "a look is bounded and never retried"
        if path.startswith("/api/nodes"):
            if self.status is not None:
                raise ManagementError(f"HTTP {self.status}", self.status)
            return self.nodes
        if "/connections" in path:
            return self.connections
        raise AssertionError(path)

    def alarm(self, on: bool) -> None:
        self.nodes = [{"name": NODE, "mem_alarm": on, "disk_free_alarm": False}]


def test_a_cell_asking_takes_one_fresh_look_shared_by_the_cells_asking_with_it() -> None:
    api = FakeManagement()
    conditions = BrokerConditions(api, "v")  # type: ignore[arg-type]
    t0 = time.monotonic()
    assert conditions.cause(t0) is None
    api.alarm(True)
    assert conditions.cause(t0) is None, "a look under half a second old is reused"
    assert len(api.calls) == 1
    conditions._looked_at -= 1.0
    assert conditions.cause(t0).startswith(f"broker alarm: memory (publishers blocked) on {NODE} since ")
    assert len(api.calls) == 2


def test_concurrent_askers_do_not_each_call_the_api() -> None:
    api = FakeManagement()
    api.alarm(True)
    conditions = BrokerConditions(api, "v")  # type: ignore[arg-type]
    t0 = time.monotonic()
    answers: list = []
    threads = [threading.Thread(target=lambda: answers.append(conditions.cause(t0))) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert len(answers) == 16 and all(a and "memory" in a for a in answers)
    assert len(api.calls) == 1


def test_a_look_that_fails_is_no_news_the_spans_stay() -> None:
    api = FakeManagement()
    api.alarm(True)
    conditions = BrokerConditions(api, "v")  # type: ignore[arg-type]
    conditions.look()
    api.status = 500
    conditions._looked_at -= 1.0
    conditions.look()
    assert conditions.log.held_now(), "an API that did not answer did not clear the alarm"


def test_a_user_not_shown_the_nodes_gets_the_run_vhosts_blocked_connections() -> None:
    api = FakeManagement(status=403, connections=[{"name": "a -> b", "state": "blocked",
                                                   "client_properties": {"connection_name": "acemq-python requester"}}])
    conditions = BrokerConditions(api, "run vhost")  # type: ignore[arg-type]
    t0 = time.monotonic() - 1.0
    cause = conditions.cause(t0)
    assert cause.startswith("broker blocked the run's connection ('acemq-python requester'): publishers blocked since ")
    assert api.calls[-1].startswith("/api/vhosts/run%20vhost/connections?")
    conditions._looked_at -= 1.0
    conditions.look()
    assert not any(c.startswith("/api/nodes") for c in api.calls[2:]), "asked once, then the connections only"


def test_the_thread_looks_once_a_second_and_logs_raised_and_cleared() -> None:
    api = FakeManagement()
    lines: list[str] = []
    conditions = BrokerConditions(api, "v", lines.append, interval_s=0.05).start()  # type: ignore[arg-type]
    try:
        api.alarm(True)
        deadline = time.monotonic() + 5
        while not any("raised" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.02)
        api.alarm(False)
        while not any("cleared" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        conditions.stop()
    assert lines == [f"broker condition raised: broker alarm: memory (publishers blocked) on {NODE}",
                     f"broker condition cleared: broker alarm: memory (publishers blocked) on {NODE}"]
    calls = len(api.calls)
    assert conditions.cause(0.0) is not None and len(api.calls) == calls, "once stopped, no more looks"


def test_the_watch_gives_no_alarm_cause_once_the_broker_is_lost() -> None:
    api = FakeManagement()
    api.alarm(True)
    watch = BrokerWatch(loopback_endpoint(1, 2), conditions=BrokerConditions(api, "v"))  # type: ignore[arg-type]
    assert "memory" in watch.condition(time.monotonic())
    watch.cause = "the private node has exited"
    assert watch.condition(time.monotonic()) is None, "a lost broker is the cause then, not its alarm"
    assert BrokerWatch(loopback_endpoint(1, 2)).condition(0.0) is None


@pytest.mark.parametrize("nodes, expected", [
    ([{"name": NODE, "mem_alarm": True, "disk_free_alarm": False}],
     f"the broker has a memory alarm in effect on {NODE}: it blocks every publisher, so every cell would time out; "
     "free memory on the broker's host or raise its limit (rabbitmqctl set_vm_memory_high_watermark), then run again"),
    ([{"name": NODE, "mem_alarm": False, "disk_free_alarm": True}], "disk alarm in effect"),
    ([{"name": NODE, "mem_alarm": False, "disk_free_alarm": False}], None),
])
def test_preflight_refuses_a_broker_with_an_alarm_in_one_line(nodes, expected) -> None:
    problem = preflight_problem(FakeManagement(nodes))  # type: ignore[arg-type]
    if expected is None or expected.startswith("the broker"):
        assert problem == expected
    else:
        assert expected in problem and "\n" not in problem


def test_preflight_does_not_refuse_a_broker_that_hides_its_nodes() -> None:
    assert preflight_problem(FakeManagement(status=403)) is None  # type: ignore[arg-type]


# -- the engine's use: a FAIL under the alarm is an ERROR naming it; a PASS never asks --------


def test_a_fail_under_an_alarm_is_an_error_naming_it_and_a_pass_never_asks() -> None:
    api = FakeManagement()
    api.alarm(True)
    broker = FakeBroker()
    ctx = context(FakePeer("a", broker, defects={"wrong-reply-to"}), FakePeer("b", broker))
    conditions = BrokerConditions(api, "v")  # type: ignore[arg-type]
    ctx.broker_condition = conditions.cause
    failed = run_cell(pair_cell(ROUND_TRIP, "a", "b"), "c0001", ctx)
    assert failed.status == Status.ERROR and failed.rule is None and failed.failures == []
    first, second = failed.message.splitlines()[:2]
    assert first.startswith(f"broker alarm: memory (publishers blocked) on {NODE} since "), failed.message
    assert second.startswith("(the cell's check RR-6.2 failed under it: "), failed.message
    calls = len(api.calls)
    conditions._looked_at -= 1.0
    passed = run_cell(pair_cell(ROUND_TRIP, "b", "b"), "c0002", ctx)
    assert passed.status == Status.PASS and len(api.calls) == calls, "a PASS costs no look"
