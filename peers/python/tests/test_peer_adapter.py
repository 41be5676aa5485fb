"""The peer adapter's pure parts: echo body, failure text, the policy table, hello, output lines,
and how a binding's errors become outcomes."""

import builtins
import copy
import io
import json
from concurrent.futures import Future, TimeoutError as FutureTimeout
from pathlib import Path
from dataclasses import fields

import pytest
import yaml

from acemq import RequestRefused, RequestTimedOut, RequestTimeoutError
from acemq._policy import RequesterPolicy, ResponderPolicy
from acemq.requester import Requester
from acemq.responder import Request
from acemq.wire import failure_text
from acemq_peer import BadCommand, Output, Peer, _optional, make_handler
from acemq_peer_load import nearest_rank
from acemq_peer_policies import CANNOT_HAVE, PolicyTable, UnknownName, find_catalogue

CATALOGUE = yaml.safe_load(find_catalogue().read_text(encoding="utf-8"))
TABLE = PolicyTable(CATALOGUE)
OFFERED = [name for name in CATALOGUE["mutants"] if name not in CANNOT_HAVE]


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


def _expected(values):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}


@pytest.mark.parametrize("name", OFFERED)
def test_every_mutant_sets_exactly_its_catalogue_policy_on_its_side(name):
    mutant = CATALOGUE["mutants"][name]
    requester, responder = TABLE.requester(None, name), TABLE.responder(None, name)
    on_requester = mutant["side"] in ("requester", "gatherer")
    acting, default = (requester, RequesterPolicy()) if on_requester else (responder, ResponderPolicy())
    other = responder if on_requester else requester
    assert other == type(other)()  # the other side runs as current
    assert _set_fields(acting, default) == _expected(mutant["policy"])


def test_every_catalogue_mutant_is_offered_but_an_only_where_one_pika_cannot_write():
    missing = [name for name in CATALOGUE["mutants"] if name not in TABLE.mutants]
    assert missing == ["narrow-int-header"]
    assert all(CATALOGUE["mutants"][name].get("only_where") for name in missing)


def test_a_mutant_not_offered_without_only_where_fails_at_start_up():
    catalogue = copy.deepcopy(CATALOGUE)
    del catalogue["mutants"]["narrow-int-header"]["only_where"]
    with pytest.raises(ValueError, match="narrow-int-header has no only_where"):
        PolicyTable(catalogue)


def test_a_mutant_not_offered_is_refused_saying_why():
    with pytest.raises(UnknownName, match="never B, u or i"):
        TABLE.requester(None, "narrow-int-header")


def test_profiles_are_the_catalogues_for_this_peer():
    mine = [name for name, p in CATALOGUE["profiles"].items() if name == "current" or "python" in (p.get("peers") or {})]
    assert TABLE.profiles == mine == ["current", "0.5.0", "0.3.0"]
    for name in mine:
        values = (CATALOGUE["profiles"][name].get("peers") or {}).get("python") or {}
        assert _set_fields(TABLE.requester(name, None), RequesterPolicy()) == _expected(values.get("requester") or {})
        assert _set_fields(TABLE.responder(name, None), ResponderPolicy()) == _expected(values.get("responder") or {})


def test_a_profile_and_a_mutant_combine():
    policy = TABLE.requester("0.3.0", "native-only")
    assert not policy.write_native_address and not policy.write_header_address


@pytest.mark.parametrize("profile, mutant, named", [("0.7.12", None, "0.3.0"), (None, "made-up", "no-strip")])
def test_unknown_names_are_refused_naming_the_valid_ones(profile, mutant, named):
    with pytest.raises(UnknownName, match=named):
        TABLE.requester(profile, mutant)


def _hello(**command):
    peer = Peer(Output(io.StringIO()))
    return peer.hello({"op": "hello", "amqp_url": "amqp://unused/", **command})


def test_hello_speaks_the_highest_offered_and_1_when_asked():
    v3 = _hello(protocol=3, protocols=[1, 2, 3])
    assert v3["protocol"] == 3 and "load" in v3["capabilities"]
    v2 = _hello(protocol=2, protocols=[1, 2])
    assert v2["protocol"] == 2 and "load" in v2["capabilities"]
    assert v2["mutants"] == OFFERED and v2["profiles"] == TABLE.profiles
    v1 = _hello(protocol=1)
    assert v1["protocol"] == 1 and "load" not in v1["capabilities"]
    with pytest.raises(BadCommand):
        _hello(protocol=4)


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
