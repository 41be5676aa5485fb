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
    """A MUST of the wire spec was broken (FAIL): carries the rule and the evidence."""

    def __init__(self, rule: str, message: str, expected: object = None, observed: object = None):
        super().__init__(f"{rule}: {message}")
        self.rule = rule
        self.message = message
        self.expected = expected
        self.observed = observed


class TemplateError(Exception):
    """A `${...}` template names nothing the cell has bound (the scenario's mistake, an ERROR)."""
