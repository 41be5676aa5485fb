"""Credentials never reach an output: one place renders URLs and command lines for people.

Every report, results file, rerun line and log message that shows a broker URL passes it
through `url`; a command line goes through `argv`; any other text (a cell's message, a
peer's stderr, an error) goes through `text`, which hides the password of every
`user:password@host` in it, whatever the shape around it (`amqp://`, `amqp:/`, `amqp//`, no
scheme at all), and every password the run was given (`remember`), wherever it appears. A
rerun line never carries a password: it names the environment variable the
password-bearing URL is read from instead.

The CLI remembers the passwords of its arguments and of `$ACEMQ_INTEROP_BROKER` before it
parses anything (`remember_arguments`), so even a URL too malformed to parse, or an
argparse error quoting one, is shown without them; and it takes the variable out of its own
environment (`take_broker_env`), so no process it starts inherits it (`child_environ` also
leaves out any variable that holds a credential).
"""
from __future__ import annotations

import os
import re
import threading
import urllib.parse
from typing import Iterable, Mapping

BROKER_ENV = "ACEMQ_INTEROP_BROKER"
HIDDEN = "***"
# A run of text with a `:` before an `@`: `scheme://user:password@host...`, or a shape too
# malformed to be a URL (`user:password@host`, `amqp:/user:password@host`). Quotes, angle
# brackets and whitespace end it.
_USERINFO_TOKEN = re.compile(r"[^\s'\"<>`]*:[^\s'\"<>`]*@[^\s'\"<>`]*")
# What may stand before the user name: a scheme with its slashes, however many (or none).
_SCHEME_PREFIX = re.compile(r"(?i)^(?:[a-z][a-z0-9+.-]*(?::/*|/+)|/+)")
_KNOWN_SCHEME = re.compile(r"(?i)^(?:amqps?|https?)(?::/*|/+)")
# The placeholders the tool's own help and messages use: not a secret, shown as written.
_PLACEHOLDER = "USER:PASS@"
# Passwords this process was given: redacted in any text. A very short or well-known
# password (guest) is not remembered: hiding "guest" everywhere would hide the user name.
_MIN_REMEMBERED = 4
_WELL_KNOWN = frozenset({"guest"})
# Options whose value is a URL that may carry a password.
URL_OPTIONS = ("--broker", "--management-url")
_remembered: set[str] = set()
_lock = threading.Lock()
_broker_env: list[str | None] = [None]  # $ACEMQ_INTEROP_BROKER once taken out of the environment


def remember(password: str | None) -> None:
    """A password of this run: never shown in any text passed through `text`."""
    if password and len(password) >= _MIN_REMEMBERED and password not in _WELL_KNOWN:
        with _lock:
            for form in {password, urllib.parse.quote(password, safe=""), urllib.parse.unquote(password)}:
                if len(form) >= _MIN_REMEMBERED and form not in _WELL_KNOWN:
                    _remembered.add(form)


def password_of(value: str) -> str | None:
    """The password part of `value` if it has the shape `[scheme:][//]user:password@host`,
    however malformed the rest; None when it carries none."""
    split = _split(value)
    return split[1] if split is not None else None


def _split(token: str) -> tuple[str, str, str] | None:
    """(what comes before the password, the password, `@` and what follows), or None."""
    if _PLACEHOLDER in token:
        return None
    head, at, tail = token.rpartition("@")
    if not at:
        return None
    known = _KNOWN_SCHEME.match(head)
    prefix = known or _SCHEME_PREFIX.match(head)
    start = prefix.end() if prefix else 0
    colon = head.find(":", start)
    if colon < 0 and prefix is not None and not known:
        # `user:password@host`: what looked like a scheme was the user name.
        colon = head.find(":")
    if colon < 0:
        return None
    return head[: colon + 1], head[colon + 1:], "@" + tail


def _hide_userinfo(token: str) -> str:
    split = _split(token)
    if split is None:
        return token
    before, _, after = split
    return f"{before}{HIDDEN}{after}"


def url(text: str) -> str:
    """`amqp://user:secret@host/` -> `amqp://user:***@host/`; any other shape (no scheme, one
    slash, a space in the password) keeps its shape with the password part hidden."""
    if _PLACEHOLDER in text:
        return text
    return _hide_userinfo(_forget(text))


def _forget(text: str) -> str:
    with _lock:
        secrets = sorted(_remembered, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, HIDDEN)
    return text


def text(message: str) -> str:
    """Any text with the password of every `user:password@` in it hidden, and every
    remembered password, wherever it is."""
    message = _forget(message)
    if "@" not in message:
        return message
    return _USERINFO_TOKEN.sub(lambda m: _hide_userinfo(m.group(0)), message)


def argv(args: list[str]) -> list[str]:
    """A command line as shown: the value of a URL option with its password part hidden
    whatever its shape (`--broker X`, `--broker=X`), every other argument through `text`."""
    shown: list[str] = []
    url_next = False
    for arg in args:
        name, equals, value = arg.partition("=")
        if url_next:
            shown.append(url(arg))
        elif equals and _url_option(name):
            shown.append(f"{name}={url(value)}")
        else:
            shown.append(text(arg))
        url_next = _url_option(arg)
    return shown


def _url_option(arg: str) -> bool:
    """`--broker`, `--management-url`, or an abbreviation argparse would take for one."""
    return len(arg) >= 3 and any(option.startswith(arg) for option in URL_OPTIONS)


def remember_arguments(args: Iterable[str], environ: Mapping[str, str] | None = None) -> None:
    """Before anything parses them: the password of every URL option's value (and of the
    broker variable) shaped `user:password@host`, whatever else is wrong with it."""
    environ = os.environ if environ is None else environ
    values = [environ.get(BROKER_ENV) or ""]
    args = list(args)
    for index, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        if equals and _url_option(name):
            values.append(value)
        elif _url_option(arg) and index + 1 < len(args):
            values.append(args[index + 1])
    for value in values:
        password = password_of(value)
        if password:
            remember(password)
            if " " in password:  # each part of it is a secret too
                for part in password.split():
                    remember(part)


def take_broker_env() -> dict[str, str]:
    """The CLI, first thing: `$ACEMQ_INTEROP_BROKER` read once and taken out of this
    process's environment, so no process the harness starts inherits it (a peer gets its
    URL in `hello`); every variable that holds a credential goes with it. Returns what was
    taken (a caller in Python puts it back when the command is done)."""
    _broker_env[0] = os.environ.get(BROKER_ENV)
    taken = {k: v for k, v in os.environ.items() if k == BROKER_ENV or holds_credential(v)}
    for key in taken:
        os.environ.pop(key, None)
    return taken


def broker_env() -> str | None:
    """`$ACEMQ_INTEROP_BROKER`, as given (also after `take_broker_env`)."""
    return _broker_env[0] if _broker_env[0] is not None else os.environ.get(BROKER_ENV)


def holds_credential(value: str) -> bool:
    """A URL with a password in it (any shape), or a password this run was given."""
    if "@" in value and _USERINFO_TOKEN.search(value) and any(
            _split(m.group(0)) is not None for m in _USERINFO_TOKEN.finditer(value)):
        return True
    return _forget(value) != value


def child_environ(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a process the harness starts: its own, less the broker variable
    and every variable that holds a credential; then `extra` (a manifest's `env:`)."""
    env = {k: v for k, v in os.environ.items() if k != BROKER_ENV and not holds_credential(v)}
    env.update(extra or {})
    return env


def has_secret(broker_url: str | None) -> bool:
    if not broker_url:
        return False
    try:
        if urllib.parse.urlsplit(broker_url).password is not None:
            return True
    except ValueError:
        return True
    return password_of(broker_url) is not None
