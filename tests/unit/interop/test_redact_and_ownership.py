"""Pure parts of the broker's fault handling: redaction, owner records, which errors are retried."""
from __future__ import annotations

import http.client
import os
import subprocess
import sys
import urllib.error

import pytest

from acemq_interop.core import redact
from acemq_interop.broker.management import _transient
from acemq_interop.core.ownership import Owner, boot_id, pid_namespace, start_time, vhost_description, vhost_owner


@pytest.mark.parametrize("given, shown", [
    ("amqp://u:secret@h:5672/v", "amqp://u:***@h:5672/v"),
    ("amqp://u:secret@h/", "amqp://u:***@h/"),
    ("amqp://u:secret@[::1]:5672/", "amqp://u:***@[::1]:5672/"),
    ("amqp://u:secret@[::1/", "amqp://u:***@[::1/"),  # too malformed to parse: the shape is kept
    ("amqp://u:secret@h:notaport/", "amqp://u:***@h:notaport/"),
    ("amqp://u:secret@h:99999/", "amqp://u:***@h:99999/"),
    ("amqp://h:5672/", "amqp://h:5672/"),
    ("amqp://USER:PASS@HOST[:PORT]/", "amqp://USER:PASS@HOST[:PORT]/"),  # the help's own placeholder
])
def test_a_url_is_shown_without_its_password(given: str, shown: str) -> None:
    assert redact.url(given) == shown


def test_text_hides_urls_and_remembered_passwords_anywhere() -> None:
    redact.remember("pw-remembered-123")
    redact.remember("guest")  # well known and short ones are not hidden everywhere
    said = redact.text("peer said: cannot log in as u with pw-remembered-123 at amqps://u:other@h/ (user guest)")
    assert "pw-remembered-123" not in said and "other" not in said
    assert "user guest" in said and "amqps://u:***@h/" in said


def test_a_rerun_line_names_the_variable_when_the_url_has_a_password() -> None:
    from acemq_interop.run.verdict import rerun_line

    line = rerun_line(["go"], "c[x]", "amqp://u:secret@h/")
    assert "secret" not in line and '--broker "$ACEMQ_INTEROP_BROKER"' in line


def test_an_owner_is_alive_while_its_process_lives_and_dead_after() -> None:
    assert not Owner.me("n@h").dead()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    record = Owner(child.pid, start_time(child.pid), boot_id(), pid_namespace(), "h", "n@h")
    child.wait()
    assert record.dead()
    # the same pid reused by another process: a different start time is a dead owner
    assert Owner(os.getpid(), (start_time(os.getpid()) or 0) + 1, boot_id(), pid_namespace(), "h").dead()


def test_an_owner_from_another_boot_is_dead_and_from_another_pid_namespace_unknown() -> None:
    assert Owner(os.getpid(), start_time(os.getpid()), "another-boot", pid_namespace(), "h").dead()
    elsewhere = Owner(1, 1, boot_id(), "pid:[1]", "container")
    assert not elsewhere.judgeable() and not elsewhere.dead(), "never judged from a process table it is not in"


def test_a_vhost_description_carries_the_owner_and_nothing_else_parses_as_one() -> None:
    owner = vhost_owner(vhost_description())
    assert owner is not None and owner.pid == os.getpid()
    assert vhost_owner("Default virtual host") is None and vhost_owner(None) is None
    assert vhost_owner("acemq-interop owner {not json") is None


def test_resets_are_retried_and_refusals_are_not() -> None:
    assert _transient(urllib.error.URLError(ConnectionResetError(104, "reset")))
    assert _transient(http.client.RemoteDisconnected("closed"))
    assert not _transient(urllib.error.URLError(ConnectionRefusedError(111, "refused")))
    assert not _transient(urllib.error.URLError(TimeoutError("timed out")))
