"""The catalogue (catalogue/catalogue.yaml): rules and clauses, policies, mutants, profiles.

This is the one source of these facts. docs/wire-spec.md's tables are checked against it
by the tests, and every peer's `hello` offer is checked against it when a run starts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NoReturn

import yaml

from ..core.paths import CATALOGUE_DIR

CATALOGUE_FILE = CATALOGUE_DIR / "catalogue.yaml"
WIRE_VECTORS_FILE = CATALOGUE_DIR / "wire-vectors.json"
SIDES = ("requester", "responder", "gatherer")
# The side a clause obliges: the peer playing it is the one a FAIL of the clause charges.
# `either`: a rule for every binding (a writer's header types, a reader's leniency); the
# check says whose message or answer it reads, or the scenario has only one peer role.
CLAUSE_SIDES = (*SIDES, "either")


@dataclass(frozen=True)
class Clause:
    id: str  # RR-4.2
    rule: str  # RR-4
    text: str
    side: str = "either"  # requester | responder | gatherer | either (CLAUSE_SIDES)
    # Why no scenario can see it on the wire, and how it is checked instead (None: a
    # scenario must assert it; a unit test holds every clause to one or the other).
    unobservable: str | None = None


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    clauses: tuple[Clause, ...]


@dataclass(frozen=True)
class Mutant:
    name: str
    side: str  # requester | responder | gatherer
    clause: str
    policy: dict[str, Any]
    description: str
    # Set when only some clients can have the defect at all (e.g. write a header type others
    # cannot): which ones, and why. A peer whose client cannot need not offer it; every other
    # mutant every peer offers.
    only_where: str | None = None

    @property
    def rule(self) -> str:
        return rule_of(self.clause)

    @property
    def acts_on(self) -> str:
        """The peer command that carries it: gatherer mutants live on a requester."""
        return "responder.start" if self.side == "responder" else "requester.open"

    @property
    def opened_as(self) -> str:
        """What a scenario must open and use for it to run: a `requester`, a `responder`, or a
        requester's gathers (`gatherer`)."""
        return self.side


@dataclass(frozen=True)
class Profile:
    name: str
    what: str
    peers: dict[str, dict[str, Any]] = field(default_factory=dict)  # peer -> {side: {policy: value}}

    def offered_by(self, peer: str) -> bool:
        return self.name == "current" or peer in self.peers


@dataclass(frozen=True)
class Part:
    """An optional part of a binding (hello `lacks`) and the clauses its absence breaks."""

    name: str
    means: str
    breaks: frozenset[str]


@dataclass(frozen=True)
class PathEntry:
    """One path a clause governs (the catalogue's `path_table:`): the scenarios checking the
    clause on it, or, where none does, the written reason it cannot be observed there."""

    path: str
    checked_by: tuple[str, ...] = ()
    unchecked: str | None = None


def _under(clause: str, ids: tuple[str, ...]) -> bool:
    """The clause is one of `ids`, or a clause of a rule among them."""
    return clause in ids or rule_of(clause) in ids


@dataclass(frozen=True)
class ForeignCase:
    """One column of the foreign-interop matrix (`foreign_cases:`): the checks of one pair
    scenario that it reads, all of them, only `clauses`, or all but `excluding`."""

    id: str
    title: str
    scenario: str
    clauses: tuple[str, ...] = ()
    excluding: tuple[str, ...] = ()

    def covers(self, clause: str) -> bool:
        if self.clauses:
            return _under(clause, self.clauses)
        return not _under(clause, self.excluding)


@dataclass(frozen=True)
class Incompatibility:
    """A known incompatibility with a stack that is not acemq (`incompatibilities:`): why a
    case of the foreign-interop matrix fails, where no rule makes it work."""

    id: str
    stacks: str  # a regular expression on the manifest's foreign.stack
    side: str  # caller | responder | any: the stack's side in the cell
    clauses: tuple[str, ...]
    reason: str

    def explains(self, stack: str, side: str, clause: str) -> bool:
        import re

        return (self.side in ("any", side) and _under(clause, self.clauses)
                and re.search(self.stacks, stack) is not None)


@dataclass(frozen=True)
class Catalogue:
    rules: dict[str, Rule]
    policies: dict[str, dict[str, Any]]  # side -> policy name -> {default, values?, means}
    mutants: dict[str, Mutant]
    profiles: dict[str, Profile]
    parts: dict[str, Part] = field(default_factory=dict)
    # The path vocabulary (`paths:`, name -> what it is) and, per clause, the paths the spec
    # makes it govern, in the catalogue's order (`path_table:`).
    paths: dict[str, str] = field(default_factory=dict)
    path_table: dict[str, tuple[PathEntry, ...]] = field(default_factory=dict)
    foreign_cases: dict[str, ForeignCase] = field(default_factory=dict)
    incompatibilities: dict[str, Incompatibility] = field(default_factory=dict)

    def incompatibility(self, stack: str, side: str, clause: str) -> Incompatibility | None:
        return next((i for i in self.incompatibilities.values() if i.explains(stack, side, clause)), None)

    @property
    def clauses(self) -> dict[str, Clause]:
        return {c.id: c for rule in self.rules.values() for c in rule.clauses}

    def title(self, rule_or_clause: str) -> str:
        rule = self.rules.get(rule_of(rule_or_clause))
        return rule.title if rule else ""

    def describe(self, clause_id: str) -> str:
        """`RR-4.2 (RR-4 How a reply is addressed)`: a clause with its rule, as reports name a FAIL."""
        rule = rule_of(clause_id)
        title = self.title(clause_id)
        if rule == clause_id:
            return f"{rule} {title}".strip()
        return f"{clause_id} ({rule} {title})" if title else clause_id


def rule_of(rule_or_clause: str) -> str:
    """`RR-4.2` -> `RR-4`; a rule id is its own rule."""
    head, _, _ = rule_or_clause.partition(".")
    return head


def is_clause_id(text: str) -> bool:
    """`RR-4.2` is a clause id; `RR-4` is a rule id."""
    return "." in text


class CatalogueError(ValueError):
    pass


def _clause(path: Path, rule_id: str, clause_id: str, value: Any, rule_side: str) -> Clause:
    """A clause is its text, or `{text, side?, unobservable?}`: its own side (else its rule's),
    and why no scenario can see it on the wire."""
    if isinstance(value, dict):
        unknown = set(value) - {"text", "unobservable", "side"}
        if unknown or "text" not in value:
            raise CatalogueError(f"{path}: clause {clause_id}: a clause is its text or {{text, side?, unobservable?}}")
        reason = value.get("unobservable")
        side = str(value.get("side", rule_side))
        if side not in CLAUSE_SIDES:
            raise CatalogueError(f"{path}: clause {clause_id}: side {side!r} is not one of {CLAUSE_SIDES}")
        return Clause(clause_id, rule_id, str(value["text"]), side, None if reason is None else str(reason))
    return Clause(clause_id, rule_id, str(value), rule_side)


def _line(root: yaml.Node | None, keys: list[Any]) -> int:
    from .strict_yaml import line_at

    return line_at(root, keys)


def _path_table(path: Path, root: yaml.Node | None, data: dict[str, Any], clauses: dict[str, Clause]
                ) -> tuple[dict[str, str], dict[str, tuple[PathEntry, ...]]]:
    """`paths:` (the vocabulary) and `path_table:` (clause -> {path: [scenario ids] | {unchecked: why}}).

    Every clause a scenario can observe is in the table with at least one path; a path is one
    of the vocabulary's; each names the scenarios checking the clause on it (tests hold them to
    asserting it), or the reason it cannot be observed there. Bad data is refused with file:line."""
    def fail(keys: list[Any], message: str) -> NoReturn:
        raise CatalogueError(f"{path}:{_line(root, keys)}: {message}")

    vocabulary = data.get("paths") or {}
    if not isinstance(vocabulary, dict) or not all(isinstance(k, str) and isinstance(v, str) and v for k, v in vocabulary.items()):
        fail(["paths"], "paths: maps each path's name to what it is (a non-empty text)")
    table_data = data.get("path_table") or {}
    if not isinstance(table_data, dict):
        fail(["path_table"], "path_table: maps each clause id to {path: [scenario ids] or {unchecked: why}}")
    table: dict[str, tuple[PathEntry, ...]] = {}
    for clause_id, entries in table_data.items():
        at = ["path_table", clause_id]
        if clause_id not in clauses:
            fail(at, f"path_table: {clause_id} is not a clause of the rules")
        if clauses[clause_id].unobservable:
            fail(at, f"path_table: {clause_id} is unobservable on every path (its `unobservable:` says why); drop it here")
        if not isinstance(entries, dict) or not entries:
            fail(at, f"path_table: {clause_id}: give the paths it governs, {{path: [scenario ids] or {{unchecked: why}}}}")
        rows = []
        for name, value in entries.items():
            if name not in vocabulary:
                fail([*at, name], f"path_table: {clause_id}: path {name!r} is not in paths: ({', '.join(vocabulary)})")
            if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
                if len(set(value)) != len(value):
                    fail([*at, name], f"path_table: {clause_id} {name}: a scenario is listed twice")
                rows.append(PathEntry(name, tuple(value)))
            elif isinstance(value, dict) and set(value) == {"unchecked"} and isinstance(value["unchecked"], str) \
                    and len(value["unchecked"].strip()) >= 20:
                rows.append(PathEntry(name, (), value["unchecked"].strip()))
            else:
                fail([*at, name], f"path_table: {clause_id} {name}: a non-empty list of scenario ids, or "
                                  f"{{unchecked: the reason it cannot be observed on this path (a sentence)}}")
        table[clause_id] = tuple(rows)
    missing = [c for c, clause in clauses.items() if not clause.unobservable and c not in table]
    if missing:
        fail(["path_table"], f"path_table: give the paths these clauses govern: {', '.join(missing)}")
    return dict(vocabulary), table


def load(path: Path = CATALOGUE_FILE) -> Catalogue:
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    rules: dict[str, Rule] = {}
    for rule_id, body in data["rules"].items():
        rule_side = str(body.get("side", ""))
        if rule_side not in CLAUSE_SIDES:
            raise CatalogueError(f"{path}: rule {rule_id}: side {rule_side!r} is not one of {CLAUSE_SIDES} (the side its clauses oblige)")
        clauses = tuple(_clause(path, rule_id, cid, value, rule_side) for cid, value in body["clauses"].items())
        for clause in clauses:
            if rule_of(clause.id) != rule_id:
                raise CatalogueError(f"{path}: clause {clause.id} is listed under {rule_id}")
        rules[rule_id] = Rule(rule_id, str(body["title"]), clauses)
    policies = {side: dict(values) for side, values in data["policies"].items()}
    clause_ids = {c.id for r in rules.values() for c in r.clauses}
    mutants: dict[str, Mutant] = {}
    for name, body in data["mutants"].items():
        side = body["side"]
        if side not in SIDES:
            raise CatalogueError(f"{path}: mutant {name}: side {side!r} is not one of {SIDES}")
        if body["clause"] not in clause_ids:
            raise CatalogueError(f"{path}: mutant {name}: clause {body['clause']} is not in the rules")
        obliged = next(c.side for r in rules.values() for c in r.clauses if c.id == body["clause"])
        if obliged not in ("either", side) and {obliged, side} != {"requester", "gatherer"}:
            raise CatalogueError(f"{path}: mutant {name} acts on the {side} but its clause {body['clause']} obliges the {obliged}")
        policy_side = "responder" if side == "responder" else "requester"
        for knob in body["policy"]:
            if knob not in policies[policy_side]:
                raise CatalogueError(f"{path}: mutant {name}: {knob} is not a {policy_side} policy")
        mutants[name] = Mutant(name, side, body["clause"], dict(body["policy"]), str(body["does"]),
                               str(body["only_where"]) if body.get("only_where") else None)
    profiles = {
        str(name): Profile(str(name), str(body.get("what", "")), {p: dict(v or {}) for p, v in (body.get("peers") or {}).items()})
        for name, body in data["profiles"].items()
    }
    parts = {}
    for name, body in (data.get("parts") or {}).items():
        unknown = set(body.get("breaks") or ()) - clause_ids
        if unknown:
            raise CatalogueError(f"{path}: part {name}: breaks {sorted(unknown)}, which are not clauses")
        parts[str(name)] = Part(str(name), str(body.get("means", "")), frozenset(body.get("breaks") or ()))
    all_clauses = {c.id: c for r in rules.values() for c in r.clauses}
    paths, path_table = _path_table(path, yaml.compose(text), data, all_clauses)
    cases, incompatibilities = _foreign(path, data, set(rules) | clause_ids)
    return Catalogue(rules, policies, mutants, profiles, parts, paths, path_table, cases, incompatibilities)


def _foreign(path: Path, data: dict[str, Any], ids: set[str]) -> tuple[dict[str, ForeignCase], dict[str, Incompatibility]]:
    """`foreign_cases:` and `incompatibilities:`, every rule or clause they name known."""
    import re

    def known(where: str, named: Any) -> tuple[str, ...]:
        unknown = [n for n in named or () if n not in ids]
        if unknown:
            raise CatalogueError(f"{path}: {where}: {', '.join(map(str, unknown))} are not rules or clauses")
        return tuple(str(n) for n in named or ())

    cases = {}
    for name, body in (data.get("foreign_cases") or {}).items():
        if body.get("clauses") and body.get("except"):
            raise CatalogueError(f"{path}: foreign case {name}: give clauses or except, not both")
        cases[str(name)] = ForeignCase(str(name), str(body.get("title", name)), str(body["scenario"]),
                                       known(f"foreign case {name}", body.get("clauses")),
                                       known(f"foreign case {name}", body.get("except")))
    incompatibilities = {}
    for name, body in (data.get("incompatibilities") or {}).items():
        if body.get("side") not in ("caller", "responder", "any"):
            raise CatalogueError(f"{path}: incompatibility {name}: side is caller, responder or any")
        try:
            re.compile(str(body["stacks"]))
        except re.error as exc:
            raise CatalogueError(f"{path}: incompatibility {name}: stacks is not a regular expression: {exc}") from None
        incompatibilities[str(name)] = Incompatibility(str(name), str(body["stacks"]), str(body["side"]),
                                                       known(f"incompatibility {name}", body.get("clauses")),
                                                       str(body["reason"]))
    return cases, incompatibilities


@lru_cache(maxsize=1)
def catalogue() -> Catalogue:
    return load()


def rules() -> dict[str, str]:
    """Rule id -> title."""
    return {r.id: r.title for r in catalogue().rules.values()}


def mutants() -> dict[str, Mutant]:
    return catalogue().mutants


def policy_side(side_or_op: str) -> str:
    """The policy a side or command configures: a gatherer is its requester's gathers."""
    return "responder" if side_or_op in ("responder", "responder.start") else "requester"


def policy_for(binding: str, op: str, profile: str = "current", mutant_names: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
    """The policy values (protocol 4) a requester or responder of `binding` is opened with:
    the profile's values of that binding, then each mutant acting on `op`; knobs left out keep
    the catalogue's default."""
    cat = catalogue()
    side = policy_side(op)
    chosen = cat.profiles.get(profile)
    values: dict[str, Any] = dict((chosen.peers.get(binding) or {}).get(side) or {}) if chosen is not None else {}
    carried_by = "requester.open" if op == "load" else op  # a load runs the peer's requester
    for name in mutant_names:
        mutant = cat.mutants.get(name)
        if mutant is not None and mutant.acts_on == carried_by:
            values.update(mutant.policy)
    return values


def _reachable(hello: dict[str, Any], side: str, values: dict[str, Any]) -> bool:
    knobs = hello.get("knobs") or {}
    unreachable = hello.get("unreachable") or {}
    return all(knob in (knobs.get(side) or ()) and value not in (unreachable.get(knob) or ()) for knob, value in values.items())


def offer_from_knobs(binding: str, hello: dict[str, Any]) -> tuple[list[str], list[str]]:
    """A protocol-4 peer names the policy knobs it can set (and the values its client cannot
    reach), never a catalogue name: its profiles and mutants are every one the catalogue
    makes of those knobs. A profile counts only for the binding the catalogue keeps history of."""
    cat = catalogue()
    mutants = [m.name for m in cat.mutants.values() if _reachable(hello, policy_side(m.side), m.policy)]
    profiles = [p.name for p in cat.profiles.values()
                if p.name == "current" or (binding in p.peers and all(
                    _reachable(hello, side, values) for side, values in (p.peers.get(binding) or {}).items()))]
    return profiles, mutants


def check_offer(peer: str, hello: dict[str, Any]) -> list[str]:
    """What is wrong with a peer's `hello` offer against the catalogue (empty: nothing)."""
    cat = catalogue()
    problems = []
    for side, knobs in (hello.get("knobs") or {}).items():
        for knob in knobs or ():
            if knob not in cat.policies.get(side, {}):
                problems.append(f"names {side} knob {knob!r}, which the catalogue does not have")
    for knob in hello.get("unreachable") or {}:
        if not any(knob in cat.policies[side] for side in cat.policies):
            problems.append(f"says it cannot reach values of knob {knob!r}, which the catalogue does not have")
    for name in hello.get("mutants") or []:
        if name not in cat.mutants:
            problems.append(f"offers mutant {name!r}, which the catalogue does not have")
    for name in hello.get("profiles") or []:
        if name not in cat.profiles:
            problems.append(f"offers profile {name!r}, which the catalogue does not have")
        elif not cat.profiles[name].offered_by(peer):
            problems.append(f"offers profile {name!r}, which the catalogue does not list for {peer}")
    return problems


# -- docs/wire-spec.md's mutant table is generated from the catalogue ------------------

TABLE_BEGIN = "<!-- mutant table: generated from catalogue/catalogue.yaml by `python -m acemq_interop.spec.catalogue` -->"
TABLE_END = "<!-- end of mutant table -->"


def mutant_table(cat: Catalogue | None = None) -> str:
    """The wire spec's mutant table, in the catalogue's order."""
    cat = cat or catalogue()
    lines = ["| mutant | side | breaks | what the defective binding does |", "| --- | --- | --- | --- |"]
    lines += [f"| `{m.name}` | {m.side} | {m.clause} | {m.description}"
              + (f" (only where {m.only_where})" if m.only_where else "") + " |" for m in cat.mutants.values()]
    return "\n".join(lines)


def with_mutant_table(doc: str, cat: Catalogue | None = None) -> str:
    """`doc` with the text between the table markers replaced by the generated table."""
    begin, end = doc.index(TABLE_BEGIN) + len(TABLE_BEGIN), doc.index(TABLE_END)
    return doc[:begin] + "\n" + mutant_table(cat) + "\n" + doc[end:]


if __name__ == "__main__":
    from ..core.paths import DOCS_DIR

    spec_doc = DOCS_DIR / "wire-spec.md"
    spec_doc.write_text(with_mutant_table(spec_doc.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote the mutant table of {spec_doc}")
