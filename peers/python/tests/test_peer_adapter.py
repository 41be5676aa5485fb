"""The peer adapter's pure parts: echo body, failure text, policy values by knob name, hello,
events, output lines, and how a binding's errors become outcomes."""

import builtins
import io
import json
import re
from concurrent.futures import Future, TimeoutError as FutureTimeout
from pathlib import Path
from dataclasses import fields
from typing import get_args, get_type_hints

import pytest

from acemq import RequestRefused, RequestTimedOut, RequestTimeoutError
from acemq._policy import RequesterPolicy, ResponderPolicy
from acemq.requester import Requester
from acemq.responder import Request
from acemq.wire import failure_text
from acemq_peer import BadCommand, EventsOfResponder, Output, Peer, _optional, make_handler
from acemq_peer_load import nearest_rank
from acemq_peer_policies import PolicyError, knobs, policy_of


def _request(body):
    return Request(
        body=body,
        message_id="m-1",
        correlation_id=None,
        reply_to="amq.gen-x",
        reply_to_source="native",
        headers={"x-custom": 1, "acemq-reply-to": "amq.gen-x"},
        attempt=2,
    )


def test_echo_body():
    echo = make_handler("r1", {"reply": "echo"})(_request({"correlationId": "c-1", "sku": "A"}))
    assert echo == {
        "echo": {"correlationId": "c-1", "sku": "A"},
        "responder": "r1",
        "peer": "python",
        "correlationId": "c-1",
        "seen": {
            "message_id": "m-1",
            "correlation_id": None,
            "reply_to": "amq.gen-x",
            "reply_to_source": "native",
            "headers": ["acemq-reply-to", "x-custom"],
            "attempt": 2,
        },
    }


@pytest.mark.parametrize("body", [[1, 2], {"sku": "A"}, "text", None])
def test_echo_correlation_id_is_null_without_one_in_an_object_body(body):
    echo = make_handler("r1", {"reply": "echo"})(_request(body))
    assert "correlationId" in echo and echo["correlationId"] is None


def test_fail_behaviour_text():
    with pytest.raises(Exception) as caught:
        make_handler("r1", {"reply": "fail", "error_message": "no price"})(_request({}))
    assert failure_text(caught.value) == "ScenarioFailure: no price"


def test_fail_needs_its_error_message():
    with pytest.raises(BadCommand, match="error_message"):
        make_handler("r1", {"reply": "fail"})


def _set_fields(policy, default):
    return {f.name: getattr(policy, f.name) for f in fields(policy) if getattr(policy, f.name) != getattr(default, f.name)}


def _another(kind, field):
    """A value the field takes other than its default, as JSON would carry it."""
    value = getattr(kind(), field.name)
    if isinstance(value, bool):
        return not value
    if field.name == "read_order":
        return ["native"]
    choices = get_args(get_type_hints(kind)[field.name])  # a Literal's strings
    if choices and isinstance(value, str):
        return next(choice for choice in choices if choice != value)
    for number in (value + 1, value - 1):  # a whole number, some of which take two values only
        try:
            kind(**{field.name: number})
            return number
        except (TypeError, ValueError):
            continue
    raise AssertionError(f"{field.name} takes no number beside {value}")


@pytest.mark.parametrize("kind", [RequesterPolicy, ResponderPolicy])
def test_each_knob_is_set_on_its_own_field_and_the_rest_keep_their_default(kind):
    default = kind()
    for field in fields(kind):
        value = _another(kind, field)
        changed = policy_of(kind, {field.name: value})
        assert _set_fields(changed, default) == {field.name: tuple(value) if isinstance(value, list) else value}


def test_several_knobs_at_once_and_none_is_the_binding_as_it_ships():
    policy = policy_of(RequesterPolicy, {"write_native_address": False, "match_replies_by": "oldest_waiter", "default_timeout_ms": 10000})
    assert _set_fields(policy, RequesterPolicy()) == {"write_native_address": False, "match_replies_by": "oldest_waiter",
                                                      "default_timeout_ms": 10000}
    assert policy_of(ResponderPolicy, {"read_order": ["native", "header"]}).read_order == ("native", "header")
    assert policy_of(RequesterPolicy, {}) == RequesterPolicy() and policy_of(ResponderPolicy, {}) == ResponderPolicy()


@pytest.mark.parametrize("kind, values, named", [
    (RequesterPolicy, {"write_header_adress": False}, "write_header_adress"),
    (ResponderPolicy, {"write_header_address": False}, "write_header_address"),  # a requester knob
    (RequesterPolicy, {"narrow_int_header": True}, "narrow_int_header"),  # a knob this binding has not
    (RequesterPolicy, {"count_timeouts": "no"}, "count_timeouts"),
    (RequesterPolicy, {"match_replies_by": "newest_waiter"}, "match_replies_by"),
    (RequesterPolicy, {"default_timeout_ms": 1.5}, "default_timeout_ms"),
    (ResponderPolicy, {"read_order": ["property"]}, "read_order"),
])
def test_an_unknown_knob_or_a_value_the_binding_cannot_take_is_refused_naming_it(kind, values, named):
    with pytest.raises(PolicyError, match=named):
        policy_of(kind, values)


def test_a_policy_that_is_not_an_object_is_refused():
    with pytest.raises(PolicyError):
        policy_of(RequesterPolicy, ["write_header_address"])


def _hello(**command):
    peer = Peer(Output(io.StringIO()))
    return peer.hello({"op": "hello", "amqp_url": "amqp://unused/", **command})


def test_hello_speaks_the_highest_offered_and_1_when_asked():
    v5 = _hello(protocol=5, protocols=[1, 2, 3, 4, 5])
    assert v5["protocol"] == 5 and {"on_connection_lost", "recover_connection"} <= set(v5["knobs"]["requester"])
    assert {"recover_connection", "ack_timing"} <= set(v5["knobs"]["responder"])
    v4 = _hello(protocol=4, protocols=[1, 2, 3, 4])
    assert v4["protocol"] == 4 and "load" in v4["capabilities"]
    v3 = _hello(protocol=3, protocols=[1, 2, 3])
    assert v3["protocol"] == 3 and "load" in v3["capabilities"]
    v2 = _hello(protocol=2, protocols=[1, 2])
    assert v2["protocol"] == 2 and "load" in v2["capabilities"]
    v1 = _hello(protocol=1)
    assert v1["protocol"] == 1 and "load" not in v1["capabilities"]
    with pytest.raises(BadCommand):
        _hello(protocol=6)


def test_hello_4_names_exactly_the_policy_fields_as_knobs_and_no_catalogue_name():
    v4 = _hello(protocol=4, protocols=[1, 2, 3, 4])
    assert v4["knobs"] == knobs() == {"requester": [f.name for f in fields(RequesterPolicy)],
                                      "responder": [f.name for f in fields(ResponderPolicy)]}
    assert v4["unreachable"] == {"narrow_int_header": [True]}  # pika writes no B, u or i
    assert "profiles" not in v4 and "mutants" not in v4


def test_an_older_harness_gets_the_binding_as_it_ships():
    v3 = _hello(protocol=3, protocols=[1, 2, 3])
    assert (v3["profiles"], v3["mutants"]) == (["current"], []) and "knobs" not in v3


def _refusal(peer, op, **command):
    stream = io.StringIO()
    peer._out = Output(stream)
    peer._run(7, op, {"id": 7, "op": op, **command})
    answer = json.loads(stream.getvalue().splitlines()[-1])
    assert answer["ok"] is False
    return answer["error"]


def test_a_policy_the_binding_cannot_take_is_refused_before_anything_connects():
    peer = Peer(Output(io.StringIO()))
    peer.hello({"op": "hello", "protocol": 4, "protocols": [1, 2, 3, 4], "amqp_url": "amqp://guest:guest@127.0.0.1:1/"})
    assert "write_header_adress" in _refusal(peer, "requester.open", name="q", policy={"write_header_adress": False})
    assert "read_order" in _refusal(peer, "responder.start", name="r", queue="q", policy={"read_order": ["property"]})
    assert "count_timeouts" in _refusal(peer, "load", client="binding", routing_key="q", requests=1, in_flight=1,
                                        policy={"count_timeouts": 0})


def test_before_protocol_4_only_the_binding_as_it_ships_is_offered():
    peer = Peer(Output(io.StringIO()))
    peer.hello({"op": "hello", "protocol": 3, "protocols": [1, 2, 3], "amqp_url": "amqp://guest:guest@127.0.0.1:1/"})
    assert "no mutant" in _refusal(peer, "requester.open", name="q", profile="current", mutant="any")


def _every_event(events):
    stream = io.StringIO()
    observer = EventsOfResponder(Output(stream), "r", 4, events=events)
    observer.handled(_request({}))
    observer.replied("m-1", None)
    observer.reply_failed("m-1", 1, "NO_ROUTE")
    observer.dead_lettered("m-1", "UndeliverableReply: NO_ROUTE")
    observer.unanswerable("m-1")
    return observer, stream


def test_a_responder_writes_every_event_by_default():
    _, stream = _every_event(True)
    assert [json.loads(line)["event"] for line in stream.getvalue().splitlines()] == [
        "handled", "replied", "reply_failed", "dead_lettered", "unanswerable"]


def test_events_false_writes_no_event_at_all_but_a_lost_connection_is_still_told():
    observer, stream = _every_event(False)
    assert stream.getvalue() == ""
    observer.connection_lost("CONNECTION_FORCED")
    assert json.loads(stream.getvalue())["event"] == "connection_lost"


PEER_DIR = Path(__file__).resolve().parents[1]


def _catalogue():
    return next(folder / "catalogue" / "catalogue.yaml" for folder in PEER_DIR.parents
                if (folder / "catalogue" / "catalogue.yaml").is_file()).read_text(encoding="utf-8")


def _scalar(text):
    if text in ("true", "false"):
        return text == "true"
    return int(text) if re.fullmatch(r"-?\d+", text) else text.strip('"')


def _catalogue_defaults(side):
    """The catalogue's ``policies:`` of one side, knob -> default. Each is a one-line flow mapping,
    ``    knob: {default: VALUE, ...}``, VALUE a scalar, "a string" or [a, list] (read as a tuple)."""
    policies = re.split(r"^\S", _catalogue().split("\npolicies:\n")[1], maxsplit=1, flags=re.M)[0]
    lines = re.split(r"^ {2}\S", re.split(rf"^ {{2}}{side}:$", policies, flags=re.M)[1], maxsplit=1, flags=re.M)[0]
    return {knob: tuple(_scalar(item.strip()) for item in value[1:-1].split(",")) if value.startswith("[") else _scalar(value)
            for knob, value in re.findall(r"^ {4}(\w+): \{default: (\[[^\]]*\]|\"[^\"]*\"|[^,}]+)", lines, re.M)}


@pytest.mark.parametrize("side, kind", [("requester", RequesterPolicy), ("responder", ResponderPolicy)])
def test_every_knob_hello_names_is_the_catalogues_and_defaults_to_its_default(side, kind):
    """A knob the harness leaves out keeps the binding's default: it must be the catalogue's."""
    catalogued = _catalogue_defaults(side)
    assert len(catalogued) > 20
    default = kind()
    for knob in knobs()[side]:
        assert knob in catalogued, f"{knob} is not a {side} knob of the catalogue"
        assert getattr(default, knob) == catalogued[knob], knob


def test_no_catalogue_mutant_or_release_profile_is_named_in_the_binding_the_adapter_or_the_tests():
    """The harness sends policy values; nothing here may keep a copy of the catalogue's names."""
    catalogue = _catalogue()
    # Read here and nowhere else: a mutant is `  name: {side: ...`, a profile `  name:` alone on
    # its line under `profiles:`. `current` is every binding's.
    mutants = re.findall(r"^ {2}([a-z0-9-]+):\s+\{side:", catalogue, re.M)
    profiles = re.findall(r"^ {2}(\S+):$", catalogue.split("\nprofiles:\n")[1], re.M)
    assert len(mutants) > 60 and "current" in profiles
    forbidden = mutants + [name for name in profiles if name != "current"]
    for source in [*PEER_DIR.glob("acemq/*.py"), *PEER_DIR.glob("acemq_peer*.py"), *PEER_DIR.glob("tests/*.py")]:
        text = source.read_text(encoding="utf-8")
        assert [name for name in forbidden if name in text] == [], source.name


def test_absent_fields_are_left_out_of_the_binding_call():
    assert _optional({}, "timeout_ms", "timeout") == {}
    assert _optional({"timeout_ms": None}, "timeout_ms", "timeout") == {}
    assert _optional({"timeout_ms": 250}, "timeout_ms", "timeout", lambda ms: ms / 1000) == {"timeout": 0.25}


def test_nearest_rank_percentiles():
    ordered = list(range(1, 101))
    assert [nearest_rank(ordered, p) for p in (50, 90, 99, 100)] == [50, 90, 99, 100]
    assert nearest_rank([7], 99) == 7 and nearest_rank([], 50) == 0


def test_output_writes_one_json_object_per_line():
    stream = io.StringIO()
    out = Output(stream)
    out.write({"id": 1, "ok": True})
    out.write({"event": "unmatched", "requester": "q", "correlation_id": "caf\u00e9"})
    lines = stream.getvalue().splitlines()
    assert [json.loads(line) for line in lines][1]["correlation_id"] == "caf\u00e9"
    assert len(lines) == 2


# A CA certificate only (its key was thrown away): what hello's tls.ca_file names.
TEST_CA = Path(__file__).parent / "fixtures" / "test-ca.pem"


def test_hello_with_tls_makes_every_connection_verify_the_run_ca():
    import ssl

    import pika

    from acemq.connection import connection_parameters

    peer = Peer(Output(io.StringIO()))
    answer = peer.hello({"op": "hello", "protocol": 2, "protocols": [1, 2],
                         "amqp_url": "amqps://u:p@127.0.0.1:5671/v", "tls": {"ca_file": str(TEST_CA)}})
    assert "tls" in answer["capabilities"]
    params = connection_parameters(peer._broker)
    assert isinstance(params, pika.connection.Parameters) and params.port == 5671 and params.virtual_host == "v"
    context = params.ssl_options.context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert params.ssl_options.server_hostname == "127.0.0.1"
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "test CA"),),)]
    # Each connection gets its own copy: pika mutates the parameters it is handed.
    assert params is not peer._broker and connection_parameters(peer._broker) is not params


def test_hello_refuses_a_tls_field_without_a_ca_file():
    peer = Peer(Output(io.StringIO()))
    with pytest.raises(BadCommand):
        peer.hello({"op": "hello", "protocol": 2, "amqp_url": "amqps://u:p@h/", "tls": {"ca": "x"}})
    with pytest.raises(FileNotFoundError):
        peer.hello({"op": "hello", "protocol": 2, "amqp_url": "amqps://u:p@h/", "tls": {"ca_file": "/nonexistent/ca.pem"}})


# -- a binding's timeout is the timeout outcome, whatever carries it -------------------------

class _LateTimeout(RequestTimedOut):
    """A subclass of the binding's timeout: still a timeout."""


def _wrapped(error):
    """``error`` as the cause of another error, as a layer re-raising it would (``raise ... from``)."""
    try:
        raise error
    except BaseException as inner:
        try:
            raise RuntimeError("the call failed") from inner
        except RuntimeError as outer:
            return outer


def _timeouts(error):
    """``error`` plain, wrapped once and twice, and (Python 3.11+) in an exception group."""
    cases = [error, _wrapped(error), _wrapped(_wrapped(error))]
    group = getattr(builtins, "ExceptionGroup", None)
    if group is not None:
        cases.append(group("calls", [ValueError("other"), error]))
    return cases


class _Failing:
    """A requester whose every call ends with ``error``."""

    def __init__(self, error):
        self._error = error

    def _pending(self):
        error = self._error

        class Pending:
            request_id = "m-1"

            def done(self):
                return True

            def result(self):
                raise error

        return Pending()

    def send(self, *args, **kwargs):
        return self._pending()

    def begin_gather(self, *args, **kwargs):
        return self._pending()


def _peer_with(requester):
    stream = io.StringIO()
    peer = Peer(Output(stream))
    peer._requesters["q"] = requester
    return peer, stream


def _answer(peer_and_stream, op, **fields):
    peer, stream = peer_and_stream
    peer._run(1, op, {"id": 1, "op": op, "requester": "q", **fields})
    return json.loads(stream.getvalue().splitlines()[-1])


_REQUEST = {"routing_key": "pricing", "body": {}}
_GATHER = {"mode": "multi", "endpoint": "pricing", "expected_reply_count": 2}


@pytest.mark.parametrize("error", _timeouts(RequestTimedOut("m-1", 0.2)) + _timeouts(_LateTimeout("m-1", 0.2)))
def test_a_request_timeout_plain_or_wrapped_is_the_timeout_outcome(error):
    answer = _answer(_peer_with(_Failing(error)), "request", **_REQUEST)
    assert answer["ok"] and answer["outcome"] == "timeout"


@pytest.mark.parametrize("error", _timeouts(RequestTimeoutError("g-1", 2, [{"n": 1}])))
def test_a_gather_shortfall_plain_or_wrapped_is_the_timeout_with_its_partial_replies(error):
    answer = _answer(_peer_with(_Failing(error)), "gather", **_GATHER)
    assert answer["ok"] and answer["outcome"] == "timeout_with_partial" and answer["replies"] == [{"n": 1}]


@pytest.mark.parametrize("error", [RequestRefused("no confirm"), _wrapped(FutureTimeout()), ValueError("x")])
def test_other_errors_stay_refused_calls(error):
    # A confirm that never came is a refusal, though Python spells its wait's end TimeoutError.
    for op, fields in (("request", _REQUEST), ("gather", _GATHER)):
        assert _answer(_peer_with(_Failing(error)), op, **fields)["ok"] is False


def _acked(fn, outgoing):
    confirm = Future()
    confirm.set_result(None)
    return confirm


def test_the_bindings_own_timeouts_reach_the_harness_as_timeouts():
    requester = Requester("amqp://unused/")
    requester._io.call = _acked  # published and confirmed; nobody answers
    peer = _peer_with(requester)
    assert _answer(peer, "request", **_REQUEST, timeout_ms=10)["outcome"] == "timeout"
    answer = _answer(peer, "gather", **_GATHER, timeout_ms=10)
    assert answer["outcome"] == "timeout_with_partial" and answer["replies"] == []
    assert requester.timed_out.value == 1
