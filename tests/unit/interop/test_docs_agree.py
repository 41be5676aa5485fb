"""The numbers the README and the docs quote are the code's, read from the code: a count that
drifts (540, 546 and 654 cells in three places) is a test failure, not a reader's puzzle."""
from __future__ import annotations

import re
from collections import Counter

import acemq_interop
from acemq_interop.core.paths import DATA_ROOT
from acemq_interop.peers.manifests import PeerSpec, discover
from acemq_interop.peers.protocol import PROTOCOL_VERSION, SUPPORTED_PROTOCOLS
from acemq_interop.run import cells
from acemq_interop.spec import catalogue, scenarios

README = (DATA_ROOT / "README.md").read_text(encoding="utf-8")
MUTANTS_DOC = (DATA_ROOT / "docs" / "mutants.md").read_text(encoding="utf-8")  # the counts, moved from the README


def _full_matrix_cells() -> int:
    manifests = discover()
    single_node = [s for s in scenarios.load_all() if s.nodes == 1]  # the main job's: the cluster's need --cluster
    return len(cells.plan(single_node, [PeerSpec.parse(name) for name in sorted(manifests)], False))


def test_the_clause_and_mutant_counts_the_readme_quotes_are_the_catalogues() -> None:
    cat = catalogue.catalogue()
    asserted = {c for s in scenarios.load_all() for c in s.clauses}
    unobservable = [c for c in cat.clauses.values() if c.unobservable]
    proven = {m.clause for m in cat.mutants.values()} & asserted
    said = re.search(r"Today: (\d+) clauses,\s+(\d+) asserted, (\d+) unobservable[^;]*; (\d+) mutants prove (\d+) of the (\d+)", MUTANTS_DOC)
    assert said, "docs/mutants.md: the sentence 'Today: N clauses, N asserted, N unobservable (...); N mutants prove N of the N'"
    assert tuple(map(int, said.groups())) == (len(cat.clauses), len(asserted), len(unobservable), len(cat.mutants),
                                              len(proven), len(asserted))


def test_the_scenario_counts_by_level_the_readme_quotes_are_the_scenarios() -> None:
    levels = Counter(s.level for s in scenarios.load_all())
    said = re.search(r"today (\d+), (\d+) and (\d+) of the (\d+) scenarios", MUTANTS_DOC)
    assert said, "docs/mutants.md: the sentence 'today N, N and N of the N scenarios'"
    assert tuple(map(int, said.groups())) == (levels["request/reply core"], levels["request/reply full"],
                                              levels["scatter-gather"], sum(levels.values()))


def test_every_full_matrix_count_the_readme_shows_is_todays() -> None:
    total = _full_matrix_cells()
    shown = [int(n) for n in re.findall(r"^(\d+) cells: \1 PASS", README, re.M)]
    assert shown and set(shown) == {total}, f"README shows a full matrix of {shown} cells; today it is {total}"


def test_the_package_and_the_docs_name_one_version_and_one_protocol() -> None:
    from importlib import metadata

    assert metadata.version("acemq-interop") == acemq_interop.__version__
    protocol_doc = (DATA_ROOT / "docs" / "peer-protocol.md").read_text(encoding="utf-8")
    assert protocol_doc.startswith(f"# Peer protocol, version {PROTOCOL_VERSION}\n")
    assert f"This is protocol {PROTOCOL_VERSION}." in protocol_doc
    certifying = (DATA_ROOT / "docs" / "certifying.md").read_text(encoding="utf-8")
    assert f"(version {PROTOCOL_VERSION};" in certifying
    assert f'"protocols": {list(SUPPORTED_PROTOCOLS)}' in certifying


def test_every_file_a_doc_quotes_as_it_is_is_quoted_as_it_is() -> None:
    """A doc that says "`path`, as it is:" and quotes the file in the next fenced block
    quotes today's file: a manifest quoted from memory listed a file that no longer existed."""
    quoted = 0
    for doc in [DATA_ROOT / "README.md", *sorted((DATA_ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for found in re.finditer(r"`([\w./-]+)`, as it is:\n\n```[a-z]*\n(.*?)```\n", text, re.S):
            path, block = found.groups()
            source = DATA_ROOT / path
            assert source.is_file(), f"{doc.name} quotes {path} as it is, and there is no such file"
            assert block == source.read_text(encoding="utf-8"), \
                f"{doc.name} quotes {path} as it is, and the file has changed: copy it again"
            quoted += 1
    assert quoted, "no doc quotes a file as it is any more: drop this test or the pattern changed"
