"""The scenario file's JSON schema and docs/scenarios.md's step table, both from the step registry.

`python -m acemq_interop.spec.schema` rewrites scenarios/scenario.schema.json and the table;
a test checks both are current.
"""
from __future__ import annotations

import json
from typing import Any

from .steps import (CHECK_PATTERN, COMPARISONS, GUARDS, CHARGES, CLAUSE, RULE, RULE_PATTERN, STEP_KINDS,
                    _COMPARISON_SCHEMA, _HEADER_VALUE)

def scenario_schema() -> dict[str, Any]:
    """The scenario file's JSON schema, its steps from the registry."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "acemq-interop scenario (docs/scenarios.md)",
        "$comment": "generated from acemq_interop/spec/steps.py by `python -m acemq_interop.spec.schema`: edit that, not this; "
                    "`errorMessage` is the loader's message for what fails under it",
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "title", "roles", "procedure", "steps"],
        "properties": {
            "id": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
            "title": {"type": "string", "minLength": 5},
            "rules": {"type": "array", "minItems": 1, "uniqueItems": True, "items": RULE,
                      "description": "optional: derived from the clauses the checks name; when given, held to exactly those rules"},
            "roles": {"type": "object", "minProperties": 1, "propertyNames": {"pattern": "^[a-z][a-z0-9_-]*$"},
                      "additionalProperties": {"enum": ["peer", "probe", "all-peers"]}},
            "catches": {"type": "array", "uniqueItems": True, "items": {"type": "string"},
                        "description": "mutants this scenario must catch"},
            "may_catch": {"type": "array", "uniqueItems": True, "items": {"type": "string"},
                          "description": "mutants its checks may see only by chance (a FAIL names their clause, a PASS is no miss)"},
            "assumes": {"type": "array", "uniqueItems": True, "items": CLAUSE,
                        "description": "clauses its checks presume of the peer they judge, judged by other scenarios: "
                                       "a failure by a peer that broke one of them elsewhere in the run is charged as that clause"},
            "min_protocol": {"enum": [1, 2, 3, 4, 5], "description": "the oldest peer protocol the steps need"},
            "nodes": {"type": "integer", "minimum": 2, "maximum": 9,
                      "description": "a cluster scenario: the nodes it needs (run --cluster N selects it; a SKIP on fewer)"},
            "procedure": {"type": "string", "minLength": 10},
            "steps": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/step"}},
        },
        "$defs": {
            "name": {"type": "string", "minLength": 1},
            "as": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]*$",
                   "errorMessage": "a step's name is a word (letters, digits, _ and -), no dots or spaces"},
            "template": {"type": "string", "pattern": "^\\$\\{[^}]+\\}$"},
            "ms": {"type": "integer", "minimum": 0, "maximum": 120000},
            "rule": {"type": "string", "pattern": RULE_PATTERN},
            "header_value": _HEADER_VALUE,
            "clause": {"type": "string", "pattern": CHECK_PATTERN,
                       "description": "the clause a check asserts (RR-4.2, catalogue/catalogue.yaml); a bare rule id is refused"},
            "expectation": {
                "type": "object", "required": ["that", "rule"], "additionalProperties": False, "minProperties": 3,
                "properties": {"that": {"type": "string", "minLength": 1}, "rule": CLAUSE, "charges": CHARGES, "because": {"type": "string"},
                               "guards": GUARDS,
                               "consequence_of": CLAUSE,
                               **{c: _COMPARISON_SCHEMA.get(c, {}) for c in COMPARISONS}},
            },
            "step": {
                "type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
                "properties": {k.name: k.schema for k in STEP_KINDS.values()},
            },
        },
    }


def schema_text() -> str:
    return json.dumps(scenario_schema(), indent=1) + "\n"


DOCS_BEGIN = "<!-- step table: generated from acemq_interop/spec/steps.py by `python -m acemq_interop.spec.schema` -->"
DOCS_END = "<!-- end of step table -->"


def docs_table() -> str:
    lines = ["| step | what it does | names (`as:`) |", "| --- | --- | --- |"]
    lines += [f"| {k.usage} | {k.does} | {k.names} |" for k in STEP_KINDS.values()]
    return "\n".join(lines)


def with_docs_table(doc: str) -> str:
    begin, end = doc.index(DOCS_BEGIN) + len(DOCS_BEGIN), doc.index(DOCS_END)
    return doc[:begin] + "\n" + docs_table() + "\n" + doc[end:]


if __name__ == "__main__":
    from ..core.paths import DOCS_DIR, SCENARIOS_DIR

    (SCENARIOS_DIR / "scenario.schema.json").write_text(schema_text(), encoding="utf-8")
    doc = DOCS_DIR / "scenarios.md"
    doc.write_text(with_docs_table(doc.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {SCENARIOS_DIR / 'scenario.schema.json'} and the step table of {doc}")
