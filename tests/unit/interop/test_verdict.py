"""The known-failure verdict: raw status + the known-failures list -> the final status."""
from __future__ import annotations

import pytest

from acemq_interop.spec.known_failures import KnownFailure
from acemq_interop.results.model import Status
from acemq_interop.run.verdict import rerun_line, verdict

CELL = "rr-pair-round-trip[requester=go@0.3.0,responder=dotnet@0.3.0]"
ANY = KnownFailure("rr-pair-round-trip[requester=go@0.3.0,*]", "they never talked", "https://example.invalid/1", "known-failures/h.yaml")
OF_RR1 = KnownFailure("rr-pair-*[requester=go@0.3.0,*]", "header only", "", "known-failures/h.yaml", rule="RR-1")


def test_an_unlisted_cell_keeps_its_raw_status_and_reason() -> None:
    for raw in Status:
        assert verdict(CELL, raw, None, []) .status == raw
        assert verdict(CELL, raw, None, []).reason is None
    assert verdict("other-scenario", Status.FAIL, "RR-1", [ANY]).status == Status.FAIL


def test_a_listed_failure_is_xfail_with_the_entrys_reason_and_link() -> None:
    got = verdict(CELL, Status.FAIL, "RR-4", [ANY])
    assert (got.status, got.reason) == (Status.XFAIL, "they never talked (https://example.invalid/1)")
    assert got.known is ANY
    assert verdict(CELL, Status.FAIL, "RR-1", [OF_RR1]).reason == "header only"


def test_a_listed_error_is_xfail_unless_the_entry_names_a_rule() -> None:
    assert verdict(CELL, Status.ERROR, None, [ANY]).status == Status.XFAIL
    got = verdict(CELL, Status.ERROR, None, [OF_RR1])
    assert (got.status, got.reason) == (Status.ERROR, None)


def test_a_listed_failure_of_another_rule_stays_a_fail_and_says_so() -> None:
    got = verdict(CELL, Status.FAIL, "RR-8", [OF_RR1])
    assert got.status == Status.FAIL
    assert got.reason == "listed as a known failure of RR-1 in known-failures/h.yaml, but it broke RR-8"


def test_a_listed_cell_that_passes_is_xpass_which_fails_the_run() -> None:
    got = verdict(CELL, Status.PASS, None, [ANY])
    assert got.status == Status.XPASS and got.status.bad
    assert got.reason == "listed as a known failure in known-failures/h.yaml but passed: remove the entry (they never talked)"


def test_a_skip_stays_a_skip() -> None:
    got = verdict(CELL, Status.SKIP, None, [ANY])
    assert (got.status, got.reason) == (Status.SKIP, None)


@pytest.mark.parametrize("raw", ["PASS", "FAIL"])
def test_plain_strings_are_statuses(raw: str) -> None:
    assert verdict(CELL, raw, "RR-1", []).status == Status(raw)


def test_the_first_matching_entry_decides() -> None:
    assert verdict(CELL, Status.FAIL, "RR-8", [OF_RR1, ANY]).status == Status.FAIL
    assert verdict(CELL, Status.FAIL, "RR-8", [ANY, OF_RR1]).status == Status.XFAIL


def test_the_rerun_line_names_each_peer_once_and_the_broker_when_given() -> None:
    assert rerun_line(["go", "dotnet", "go"], "x[requester=go]") == "acemq-interop run --peers dotnet,go --cell 'x[requester=go]'"
    assert rerun_line(["go"], "x", "amqp://h/").endswith("--cell 'x' --broker amqp://h/")


def test_an_entry_naming_a_rule_covers_a_fail_of_any_of_its_clauses_and_a_clause_only_itself() -> None:
    assert verdict(CELL, Status.FAIL, "RR-1.2", [OF_RR1]).status == Status.XFAIL
    assert verdict(CELL, Status.FAIL, "RR-10.1", [OF_RR1]).status == Status.FAIL, "RR-10 is not RR-1"
    of_clause = KnownFailure("rr-pair-*", "header only", "", "known-failures/h.yaml", rule="RR-1.2")
    assert verdict(CELL, Status.FAIL, "RR-1.2", [of_clause]).status == Status.XFAIL
    assert verdict(CELL, Status.FAIL, "RR-1.3", [of_clause]).status == Status.FAIL
