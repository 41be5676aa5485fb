"""The catalogue is the one source: the docs, the peers' offers and the bindings agree with it."""
from __future__ import annotations

import re

import pytest

from acemq_interop.spec import catalogue
from acemq_interop.peers.manifests import discover
from acemq_interop.core.paths import DOCS_DIR, SCENARIOS_DIR
from acemq_interop.spec.scenarios import load_file

WIRE_SPEC = DOCS_DIR / "wire-spec.md"
_HEADING = re.compile(r"^### ((?:RR|SG|WF)-\d+) (.+?)(?: \*\([^)]*\)\*)?$", re.M)


def _plain(title: str) -> str:
    return title.replace("`", "")


def test_the_wire_specs_rule_headings_are_the_catalogues_rules_in_order() -> None:
    headings = [(rid, _plain(title)) for rid, title in _HEADING.findall(WIRE_SPEC.read_text(encoding="utf-8"))]
    expected = [(r.id, r.title) for r in catalogue.catalogue().rules.values()]
    assert headings == expected


def test_the_wire_specs_mutant_table_is_generated_from_the_catalogue() -> None:
    doc = WIRE_SPEC.read_text(encoding="utf-8")
    assert catalogue.with_mutant_table(doc) == doc, (
        "docs/wire-spec.md's mutant table is stale: run `python -m acemq_interop.spec.catalogue`")
    table = doc[doc.index(catalogue.TABLE_BEGIN):doc.index(catalogue.TABLE_END)]
    rows = re.findall(r"^\| `([a-z0-9-]+)` \|", table, re.M)
    assert rows == list(catalogue.mutants())


def test_check_offer_names_unknown_mutants_and_profiles() -> None:
    assert catalogue.check_offer("go", {"mutants": list(catalogue.mutants()), "profiles": ["current", "0.3.0"]}) == []
    problems = catalogue.check_offer("go", {"mutants": ["native-only", "made-up"], "profiles": ["current", "9.9.9"]})
    assert problems == ["offers mutant 'made-up', which the catalogue does not have",
                        "offers profile '9.9.9', which the catalogue does not have"]
    assert catalogue.check_offer("node", {"profiles": ["0.7.12"]}) == [
        "offers profile '0.7.12', which the catalogue does not list for node"]


def test_every_scenario_file_is_named_after_its_id() -> None:
    files = sorted(SCENARIOS_DIR.rglob("*.yaml"))
    assert files
    misnamed = [f"{p.relative_to(SCENARIOS_DIR)} has id {load_file(p).id}" for p in files if load_file(p).id != p.stem]
    assert not misnamed


# Names a binding must never spell: every mutant, and every profile but "current" (the
# default, and an ordinary word). From protocol 4 its adapter neither: the harness sends the
# policy values, so no peer keeps a copy of the catalogue (and a new catalogue mutant made of
# existing knobs runs on every peer unchanged).
FORBIDDEN = sorted(set(catalogue.mutants()) | {p for p in catalogue.catalogue().profiles if p != "current"})


@pytest.mark.parametrize("part", ["binding", "adapter"])
@pytest.mark.parametrize("name", sorted(discover()))
def test_no_binding_or_adapter_spells_a_mutant_or_profile_name(name: str, part: str) -> None:
    manifest = discover()[name]
    globs = manifest.layout.get(part)
    assert globs, f"peers/{manifest.folder.name}/peer.yaml has no layout: {part} globs (where its {part} code lives)"
    files = sorted({p for g in globs for p in manifest.folder.glob(g) if p.is_file()})
    assert files, f"{name}: layout.{part} {list(globs)} matches no file"
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for word in FORBIDDEN:
            if re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w-])", text):
                found.append(f"{path.relative_to(manifest.folder)}: {word}")
    assert not found, f"{name}'s {part} names catalogue mutants or profiles (it holds catalogue data):\n" + "\n".join(found)
