"""The peer adapter's pure parts: echo body, failure text, mutant routing, output lines."""

import io
import json

import pytest

from acemq.mutants import Side
from acemq.responder import Request
from acemq.wire import failure_text
from acemq_peer import Output, make_handler, mutant_for


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


def test_echo_of_a_non_object_has_no_correlation_id():
    assert "correlationId" not in make_handler("r1", {"reply": "echo"})(_request([1, 2]))


def test_fail_behaviour_text():
    with pytest.raises(Exception) as caught:
        make_handler("r1", {"reply": "fail", "error_message": "no price"})(_request({}))
    assert failure_text(caught.value) == "ScenarioFailure: no price"


def test_mutants_of_the_other_side_are_left_out():
    assert mutant_for({"mutant": "no-strip"}, Side.RESPONDER) == "no-strip"
    assert mutant_for({"mutant": "no-strip"}, Side.REQUESTER, Side.GATHERER) is None
    assert mutant_for({"mutant": "shortfall-resolves"}, Side.REQUESTER, Side.GATHERER) == "shortfall-resolves"
    assert mutant_for({"mutant": "made-up"}, Side.RESPONDER) == "made-up"  # the binding refuses it
    assert mutant_for({}, Side.RESPONDER) is None


def test_output_writes_one_json_object_per_line():
    stream = io.StringIO()
    out = Output(stream)
    out.write({"id": 1, "ok": True})
    out.write({"event": "unmatched", "requester": "q", "correlation_id": "caf\u00e9"})
    lines = stream.getvalue().splitlines()
    assert [json.loads(line) for line in lines][1]["correlation_id"] == "caf\u00e9"
    assert len(lines) == 2
