"""The peer protocol's version and the check of every line a peer writes."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

PROTOCOL_VERSION = 5
# Every version this harness can drive: peers outside this repository lag behind, so a
# version-1 peer keeps certifying (it simply has no `load`), and a version-2 peer runs every
# scenario that does not need version 3 (`min_protocol` in the scenario: `type`, `closed`).
# Version 4 carries the policy values themselves (`policy`), so an adapter holds no catalogue;
# an older peer keeps getting the profile's and mutant's names.
# Version 5 names each role's connection and its broker nodes (RR-20: what a binding owes
# across a lost connection); an older peer is sent none of it.
SUPPORTED_PROTOCOLS = (1, 2, 3, 4, 5)
POLICY_PROTOCOL = 4  # from this version on, requester.open and responder.start carry `policy`
RECOVERY_PROTOCOL = 5  # from this version on: hello `amqp_urls`, each role's `connection_name` and `amqp_urls`
SCHEMA_PATH = Path(__file__).parent.parent / "schemas" / "peer-protocol.schema.json"


@lru_cache(maxsize=2)
def _validator(kind: str) -> jsonschema.protocols.Validator:
    """A validator for one definition of the schema, so errors name the real problem."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    schema.pop("oneOf")
    schema["$ref"] = f"#/$defs/{kind}"
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def validate_peer_line(message: Any) -> str | None:
    """None when `message` is an answer or an event of a protocol this harness speaks, else what is wrong."""
    if not isinstance(message, dict):
        return "a line must be a JSON object"
    if "id" not in message and "event" not in message:
        return "neither an answer (id) nor an event"
    if "op" in message:
        return "a peer writes answers and events, not commands"
    kind = "event" if "event" in message else "answer"
    error = jsonschema.exceptions.best_match(_validator(kind).iter_errors(message))
    if error is None:
        return None
    path = "/".join(str(p) for p in error.absolute_path) or "(top)"
    return f"{path}: {error.message}"
