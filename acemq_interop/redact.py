"""Credentials never reach an output: one place renders URLs and command lines for people.

Every report, results file, rerun line and log message that shows a broker URL passes it
through `url`; a command line goes through `argv`. A rerun line never carries a password:
it names the environment variable the password-bearing URL is read from instead.
"""
from __future__ import annotations

import re
import urllib.parse

BROKER_ENV = "ACEMQ_INTEROP_BROKER"
_URL_RE = re.compile(r"\b(amqps?|https?)://[^\s'\"]+")


def url(text: str) -> str:
    """`amqp://user:secret@host/` -> `amqp://user:***@host/`; unparseable text is hidden whole."""
    try:
        parts = urllib.parse.urlsplit(text)
        if parts.password is None:
            return text
        netloc = f"{parts.username or ''}:***@{parts.hostname or ''}"
        if parts.port is not None:
            netloc += f":{parts.port}"
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        return f"{text.split('://', 1)[0]}://(unparseable URL hidden)" if "://" in text else "(hidden)"


def text(message: str) -> str:
    """Any text with every URL in it redacted."""
    return _URL_RE.sub(lambda m: url(m.group(0)), message)


def argv(args: list[str]) -> list[str]:
    return [text(a) for a in args]


def has_secret(broker_url: str | None) -> bool:
    if not broker_url:
        return False
    try:
        return urllib.parse.urlsplit(broker_url).password is not None
    except ValueError:
        return True
