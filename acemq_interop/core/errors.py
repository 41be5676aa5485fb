"""Exceptions that decide how a problem is reported."""
from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user (a file, a flag, a peer name): printed, exit code 2."""


class PeerError(Exception):
    """A peer broke: crashed, hung, refused a command or spoke out of protocol (ERROR)."""


class BrokerError(Exception):
    """No broker could be had, or it misbehaved (the run stops with a clear message)."""


class ConnectionLost(BrokerError):
    """The harness's own connection (the probe's) was closed by the broker or the network:
    a fault of the run, never a conformance failure (ERROR, with the broker's reason)."""


class CheckFailed(Exception):
    """A MUST of the wire spec was broken (FAIL): carries the clause and the evidence.

    `rule` is the clause broken (RR-4.2); `seen_as` the clause of the check that saw it, when
    the check observed that clause's consequence (an expectation's `consequence_of`).
    """

    def __init__(self, rule: str, message: str, expected: object = None, observed: object = None,
                 seen_as: str | None = None):
        super().__init__(f"{rule}: {message}" + (f" (seen as {seen_as})" if seen_as else ""))
        self.rule = rule
        self.message = message
        self.expected = expected
        self.observed = observed
        self.seen_as = seen_as


class TemplateError(Exception):
    """A `${...}` template names nothing the cell has bound: a value an earlier step did not
    produce (the checks needing it are not evaluated). `path` is the template's path."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path


class CallNotEnded(PeerError):
    """A request or gather the binding never ended within its own timeout plus a grace,
    while its peer still answers other commands: the binding's fault (a FAIL of the clause
    its timeout stands for), not the peer's."""


class NotProduced(Exception):
    """A step found nothing to work on that a peer was to produce (a request the scenario
    waits for on a queue never arrived): not a fault of the run, and no clause by itself.
    The checks that need it are not evaluated; what the peer did publish is still judged on
    the wire, and a cell with nothing else to show is an ERROR saying what never came."""


class Lacking(Exception):
    """A peer showed, by its own answer, that its binding has none of an optional part it
    did not declare lacking (hello `lacks`): a `counters` refused or answered without
    counters. Judged as the declared lack is: the clauses the part's absence breaks FAIL,
    the checks that needed the part are not evaluated (docs/peer-protocol.md, `lacks`)."""

    def __init__(self, part: str, evidence: str, role: str | None = None):
        super().__init__(f"{part}: {evidence}")
        self.part = part
        self.evidence = evidence
        self.role = role  # the scenario role whose peer lacks it, when the step does not say (`of`)
