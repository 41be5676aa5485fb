"""Credentials never reach an output: one place renders URLs and command lines for people.

Every report, results file, rerun line and log message that shows a broker URL passes it
through `url`; a command line goes through `argv`; any other text (a cell's message, a
peer's stderr tail, an error) goes through `text`, which redacts every URL in it and every
password the run was given (`remember`), wherever it appears. A rerun line never carries a
password: it names the environment variable the password-bearing URL is read from instead.
"""
from __future__ import annotations

import re
import threading
import urllib.parse

BROKER_ENV = "ACEMQ_INTEROP_BROKER"
HIDDEN = "***"
_URL_RE = re.compile(r"\b(amqps?|https?)://[^\s'\"]+")
# scheme://user:password@ in a URL too malformed to parse (an unclosed `[`, a bad port).
_USERINFO_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*):([^\s]*)@")
# The placeholders the tool's own help and messages use: not a secret, shown as written.
_PLACEHOLDER = "USER:PASS@"
# Passwords this process was given: redacted in any text. A very short or well-known
# password (guest) is not remembered: hiding "guest" everywhere would hide the user name.
_MIN_REMEMBERED = 6
_WELL_KNOWN = frozenset({"guest"})
_remembered: set[str] = set()
_lock = threading.Lock()


def remember(password: str | None) -> None:
    """A password of this run: never shown in any text passed through `text`."""
    if password and len(password) >= _MIN_REMEMBERED and password not in _WELL_KNOWN:
        with _lock:
            _remembered.add(password)
            quoted = urllib.parse.quote(password, safe="")
            if quoted != password:
                _remembered.add(quoted)


def _unparseable(text: str) -> str:
    if _PLACEHOLDER in text:
        return text
    match = _USERINFO_RE.match(text)
    if match:
        return f"{match.group(1)}:{HIDDEN}@{text[match.end():]}"
    return text


def url(text: str) -> str:
    """`amqp://user:secret@host/` -> `amqp://user:***@host/`; a malformed URL keeps its
    shape with the password part hidden."""
    if _PLACEHOLDER in text:
        return text
    try:
        parts = urllib.parse.urlsplit(text)
        if parts.password is None:
            return _forget(text)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{parts.username or ''}:{HIDDEN}@{host}"
        if parts.port is not None:
            netloc += f":{parts.port}"
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        return _forget(_unparseable(text))


def _forget(text: str) -> str:
    with _lock:
        secrets = sorted(_remembered, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, HIDDEN)
    return text


def text(message: str) -> str:
    """Any text with every URL in it redacted, and every remembered password hidden."""
    return _forget(_URL_RE.sub(lambda m: url(m.group(0)), message))


def argv(args: list[str]) -> list[str]:
    return [text(a) for a in args]


def has_secret(broker_url: str | None) -> bool:
    if not broker_url:
        return False
    try:
        return urllib.parse.urlsplit(broker_url).password is not None
    except ValueError:
        return True
