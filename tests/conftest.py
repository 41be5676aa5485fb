"""Shared fixtures: one real RabbitMQ for the whole session.

By default the suite starts its own private node with the harness's EmbeddedBroker (the
same code a user's run uses) and stops it at the end; ACEMQ_TEST_BROKER=amqp://... points
the suite at an existing broker instead.
"""
from __future__ import annotations

import os
import sys

import pytest

import support

from acemq_interop.broker.endpoint import BrokerEndpoint, parse_broker_url
from acemq_interop.broker.node import EmbeddedBroker


def _log(message: str) -> None:
    print(f"[broker] {message}", file=sys.stderr, flush=True)


@pytest.fixture(scope="session")
def broker() -> BrokerEndpoint:
    url = os.environ.get("ACEMQ_TEST_BROKER")
    if url:
        yield parse_broker_url(url, os.environ.get("ACEMQ_TEST_MANAGEMENT_URL"))
        return
    node = EmbeddedBroker(_log)
    endpoint = node.start()
    support.BROKER_CONTROL[id(endpoint)] = node.control()
    try:
        yield endpoint
    finally:
        node.stop()
