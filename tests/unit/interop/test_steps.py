"""One definition per step kind: the schema file, the docs table and the loader all come from the registry."""
from __future__ import annotations

import json

from acemq_interop.run.steps import RUNS
from acemq_interop.spec import schema, steps
from acemq_interop.core.paths import DOCS_DIR
from acemq_interop.spec.scenarios import SCHEMA_PATH, load_all


def test_the_schema_file_is_generated_from_the_registry() -> None:
    assert json.loads(SCHEMA_PATH.read_text(encoding="utf-8")) == schema.scenario_schema(), (
        "scenarios/scenario.schema.json is stale: run `python -m acemq_interop.spec.schema`")


def test_the_docs_step_table_is_generated_from_the_registry() -> None:
    doc = (DOCS_DIR / "scenarios.md").read_text(encoding="utf-8")
    assert schema.with_docs_table(doc) == doc, "docs/scenarios.md's step table is stale: run `python -m acemq_interop.spec.schema`"
    for name in steps.STEP_KINDS:
        assert f"| `{name}:" in doc, name


def test_the_engine_runs_every_kind_the_registry_defines_and_no_other() -> None:
    assert set(RUNS) == set(steps.STEP_KINDS)
    schema_kinds = set(schema.scenario_schema()["$defs"]["step"]["properties"])
    assert schema_kinds == set(steps.STEP_KINDS)


def test_every_kind_is_described_consistently() -> None:
    for kind in steps.STEP_KINDS.values():
        properties = kind.schema.get("properties", {})
        assert kind.binds == ("as" in properties), kind.name
        assert kind.role == ("role" in properties), kind.name
        if kind.asserts == "rule":
            assert "rule" in properties, kind.name
        for key in kind.uses:
            assert key == "*" or key in properties, (kind.name, key)
        assert kind.capability_via is None or kind.capability_via in kind.uses, kind.name
        assert kind.names == "" or kind.binds, kind.name


def test_one_template_syntax_in_every_scenario() -> None:
    import re

    for scenario in load_all():
        text = scenario.path.read_text(encoding="utf-8")
        stray = [m for m in re.findall(r"(?<!\$)\{(index|peer)\}", text)]
        assert not stray, f"{scenario.path}: write ${{index}} / ${{peer}}"


def test_no_scenario_forges_a_plain_reply_by_hand() -> None:
    """A reply to the requester's queue with the request's own ids is a probe_reply."""
    for scenario in load_all():
        for step in scenario.steps:
            kind, args = step.kind, step.args
            if kind != "probe_publish":
                continue
            correlation = args.get("properties", {}).get("correlation_id", "")
            response_id = args.get("headers", {}).get("responseMessageId")
            assert not (correlation.endswith(".properties.message_id}") and correlation == response_id), (
                f"{scenario.path}: use probe_reply")
