"""Protocol 4's ``policy`` onto the binding's RequesterPolicy / ResponderPolicy, by field name.

The catalogue spells a knob as the binding's policy dataclasses name their fields
(``write_header_address``), so the knobs hello names are those fields and a command's
``policy`` values are set on the fields of the same names, one code path for every knob.
The adapter holds no catalogue: the harness sends the values of a profile or a mutant.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, TypeVar

from acemq._conformance import RequesterPolicy, ResponderPolicy

# Values pika cannot write, by knob: it writes an int header as I or l, never B, u or i (WF-2.1).
UNREACHABLE: dict[str, list[Any]] = {"narrow_int_header": [True]}

P = TypeVar("P", RequesterPolicy, ResponderPolicy)


class PolicyError(ValueError):
    """A knob the binding's policy lacks, or a value it cannot take."""


def knobs() -> dict[str, list[str]]:
    """hello's ``knobs``: every field of the binding's two policy types."""
    return {"requester": [f.name for f in fields(RequesterPolicy)], "responder": [f.name for f in fields(ResponderPolicy)]}


def policy_of(kind: type[P], values: Any) -> P:
    """The binding's default ``kind`` with ``values`` (knob -> JSON value) set field by field;
    a knob left out keeps its default. The policy type checks and converts each value itself
    (booleans, whole numbers, a choice's strings, ``read_order``'s list to a tuple)."""
    if not isinstance(values, dict):
        raise PolicyError(f"policy must be an object of knob values, not {values!r}")
    unknown = sorted(set(values) - {f.name for f in fields(kind)})
    if unknown:
        raise PolicyError(f"unknown policy knob {', '.join(unknown)}: the binding's {kind.__name__} has no such field")
    try:
        return replace(kind(), **values)
    except (TypeError, ValueError) as exc:
        # The values too: not every message of the policy type names its knob.
        raise PolicyError(f"the binding cannot take policy {values}: {exc}") from exc
