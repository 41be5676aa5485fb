"""AMQP field-table values as the suite writes them: a scenario's typed header values.

A header value is plain (text, an integer, a boolean, null, a list, a table) or typed with
one of the words below, which choose its AMQP field type exactly, so a scenario can write
what a defective binding would (a byte array, a `b`-typed number).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Typed:
    """A header value with an explicit AMQP field type (`x`, `b`, `l`, `I`, `t`, `d`)."""

    kind: str
    value: Any


TYPE_WORDS = {"bytes": "x", "byte": "b", "long": "l", "int": "I", "bool": "t", "double": "d"}


def header_value(spec: Any) -> Any:
    """A scenario's header value: a plain value, or `{bytes: ...}`, `{long: 5}`, `{table: {...}}`..."""
    if isinstance(spec, dict) and len(spec) == 1:
        (word, value), = spec.items()
        if word in TYPE_WORDS:
            return Typed(TYPE_WORDS[word], value)
        if word == "table":
            return {k: header_value(v) for k, v in value.items()}
        if word == "array":
            return [header_value(v) for v in value]
    return spec
