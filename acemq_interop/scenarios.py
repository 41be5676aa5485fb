"""Loading `scenarios/**/*.yaml`: schema-checked, with file and line for every problem.

Everything is loaded and checked before anything runs: one bad file stops the run with
its path, line and what is wrong, so a run never goes ahead half-loaded.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from . import assertions
from . import catalogue as spec
from .errors import UsageError
from .paths import SCENARIOS_DIR
from .steps import STEP_KINDS, scenario_schema, _uses_of

SCENARIO_DIR = SCENARIOS_DIR
# Generated from the step registry (acemq_interop/steps.py) for editors; the loader uses the registry's.
SCHEMA_PATH = SCENARIO_DIR / "scenario.schema.json"


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    rules: tuple[str, ...]  # as listed; the loader holds them to exactly the rules of `clauses`
    roles: dict[str, str]  # role -> peer | probe | all-peers
    procedure: str
    steps: tuple[dict[str, Any], ...]
    path: Path
    catches: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    needs: dict[str, frozenset[str]] = field(default_factory=dict)  # role -> capabilities
    # Derived from the checks, in the order they first appear: every clause a check asserts
    # (`rule:`) or names as the one broken (`consequence_of:`).
    clauses: tuple[str, ...] = ()

    @property
    def estimate_s(self) -> float:
        """How long a cell of this scenario takes, roughly, from the waits its steps name.

        Used to start long cells first and to balance shards when no earlier run's
        durations are given; it never decides a result.
        """
        def waits(value: Any) -> float:
            if isinstance(value, dict):
                return sum(float(v) / 1000 if k.endswith("_ms") and isinstance(v, (int, float)) and not isinstance(v, bool)
                           else waits(v) for k, v in value.items())
            if isinstance(value, list):
                return sum(waits(v) for v in value)
            return 0.0

        return 0.1 + waits(list(self.steps))

    @property
    def peer_roles(self) -> list[str]:
        return [role for role, kind in self.roles.items() if kind == "peer"]

    @property
    def matrix(self) -> str:
        """Which matrix the scenario's cells appear in."""
        kinds = sorted(self.roles.values())
        if "all-peers" in kinds:
            return "mixed"
        if set(self.roles) == {"requester", "responder"} and kinds == ["peer", "peer"]:
            return "pairs"
        if self.roles.get("requester") == "peer" and self.roles.get("responder") == "probe":
            return "requesters"
        if self.roles.get("responder") == "peer" and self.roles.get("requester") == "probe":
            return "responders"
        return "other"


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    schema = scenario_schema()
    return jsonschema.validators.validator_for(schema)(schema)


def _line_of(node: yaml.Node, path: list[Any]) -> int:
    """The 1-based line of the YAML node at a JSON-schema error path (deepest that exists)."""
    for key in path:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            match = node.value[key]
        else:
            match = None
        if match is None:
            break
        node = match
    return node.start_mark.line + 1


def _needs(roles: dict[str, str], steps: list[dict[str, Any]]) -> dict[str, frozenset[str]]:
    """What each role's peer must offer, from the capability of each step kind (a role without it SKIPs)."""
    needs: dict[str, set[str]] = {role: set() for role in roles}
    role_of: dict[str, str] = {}  # a name bound by a step with a role -> that role
    for step in steps:
        (name, args), = step.items()
        kind = STEP_KINDS[name]
        role = args.get("role") if kind.role else None
        if kind.capability_via:
            role = role_of.get(args.get(kind.capability_via))
        if kind.capability and role is not None:
            needs[role].add(kind.capability)
        if kind.role and kind.binds:
            role_of[args["as"]] = args["role"]
    return {role: frozenset(caps) for role, caps in needs.items()}


def _check_semantics(data: dict[str, Any], root: yaml.Node, where: Path) -> None:
    """What the schema cannot say: known rule ids and mutants, roles that exist, names bound before use."""
    known_rules = spec.rules()
    known_mutants = spec.mutants()

    def fail(path: list[Any], message: str) -> None:
        raise UsageError(f"{where}:{_line_of(root, path)}: {message}")

    for i, rule in enumerate(data["rules"]):
        if rule not in known_rules:
            fail(["rules", i], f"rule {rule} is not in docs/wire-spec.md (known: {', '.join(known_rules)})")
    for i, mutant in enumerate(data.get("catches", [])):
        if mutant not in known_mutants:
            fail(["catches", i], f"mutant '{mutant}' is not in the wire spec's mutant catalogue")
    bound: set[str] = set()
    for i, step in enumerate(data["steps"]):
        (name, args), = step.items()
        kind = STEP_KINDS[name]
        at = ["steps", i, name]
        if kind.role:
            role = args["role"]
            if role not in data["roles"]:
                fail([*at, "role"], f"role '{role}' is not declared in roles ({', '.join(data['roles'])})")
            if data["roles"][role] == "probe":
                fail([*at, "role"], f"role '{role}' is played by the probe; use probe_* steps for it")
        for path, used in _uses_of(kind, args):
            if used not in bound:
                if path:
                    fail([*at, *path], f"'{used}' is used before a step names it with as:")
                fail(at, f"'{used}' is not named by an earlier step (as:)")
        if kind.asserts == "expectations":
            for j, expectation in enumerate(args):
                head = expectation["that"].split(".")[0]
                if head not in bound:
                    fail([*at, j, "that"], f"'{head}' is not named by an earlier step (as:)")
        if kind.binds and isinstance(args, dict) and "as" in args:
            bound.add(args["as"])


def _clauses_of(data: dict[str, Any], root: yaml.Node, where: Path) -> tuple[str, ...]:
    """The clauses the scenario's checks assert, checked against the catalogue and its lists.

    Every check names a clause of the catalogue (never a bare rule, never none); the listed
    `rules:` are exactly the rules of those clauses; every mutant in `catches:` breaks one
    of them. Each problem is refused with file:line.
    """
    cat = spec.catalogue()
    known = cat.clauses

    def fail(path: list[Any], message: str) -> None:
        raise UsageError(f"{where}:{_line_of(root, path)}: {message}")

    def clause(path: list[Any], value: str, what: str) -> str:
        rule = cat.rules.get(spec.rule_of(value))
        if not spec.is_clause_id(value):
            if rule is None:
                fail(path, f"{what} {value} is not a rule of catalogue/catalogue.yaml")
            fail(path, f"{what} {value} names a rule; a check names the clause it asserts: one of "
                       f"{', '.join(c.id for c in rule.clauses)} (catalogue/catalogue.yaml)")
        if value not in known:
            hint = f" ({rule.id} has {', '.join(c.id for c in rule.clauses)})" if rule else ""
            fail(path, f"{what} {value} is not a clause of catalogue/catalogue.yaml{hint}")
        return value

    found: dict[str, list[Any]] = {}  # clause -> the path of its first check
    for i, step in enumerate(data["steps"]):
        (name, args), = step.items()
        kind = STEP_KINDS[name]
        at = ["steps", i, name]
        if kind.asserts == "rule" and isinstance(args, dict) and "rule" not in args:
            for key in kind.rule_when:
                if args.get(key):
                    fail([*at, key], f"{name} with {key} is a check: give it `rule:`, the clause it asserts")
        for sub, check in kind.checks(args):
            here = [*at, *sub] if kind.asserts == "rule" else [*at, *sub, "rule"]
            observed = clause(here, str(check["rule"]), "rule:")
            found.setdefault(observed, here)
            if kind.asserts == "expectations" and not any(k not in assertions.NOT_COMPARISONS for k in check):
                fail([*at, *sub], f"expectation on {check.get('that')} compares nothing: add equals, present, ...")
            if "consequence_of" in check:
                there = [*at, *sub, "consequence_of"]
                broken = clause(there, str(check["consequence_of"]), "consequence_of:")
                if broken == observed:
                    fail(there, f"consequence_of: {broken} is the clause this check asserts; drop it")
                found.setdefault(broken, there)
    listed = list(data["rules"])
    for clause_id, path in found.items():
        if spec.rule_of(clause_id) not in listed:
            fail(path, f"a check asserts {clause_id}, whose rule {spec.rule_of(clause_id)} is not in this scenario's rules")
    asserted_rules = {spec.rule_of(c) for c in found}
    for i, rule in enumerate(listed):
        if rule not in asserted_rules:
            fail(["rules", i], f"rule {rule} is listed but no check asserts a clause of it: add a check naming one of "
                               f"{', '.join(c.id for c in cat.rules[rule].clauses)}, or drop it from rules")
    for i, name in enumerate(data.get("catches", [])):
        mutant = cat.mutants[name]
        if mutant.clause not in found:
            fail(["catches", i], f"mutant '{name}' breaks {mutant.clause}, which no check of this scenario asserts"
                                 + (f" (it asserts {', '.join(sorted(c for c in found if spec.rule_of(c) == mutant.rule))})"
                                    if any(spec.rule_of(c) == mutant.rule for c in found) else ""))
    return tuple(found)


def load_file(path: Path) -> Scenario:
    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise UsageError(f"{path}{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from exc
    if root is None or not isinstance(data, dict):
        raise UsageError(f"{path}:1: a scenario is a mapping with id, title, rules, roles, procedure and steps")
    error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise UsageError(
            f"{path}:{_line_of(root, list(error.absolute_path))}: {at}: {error.message} "
            f"(see docs/scenarios.md for the scenario format)"
        )
    _check_semantics(data, root, path)
    clauses = _clauses_of(data, root, path)
    return Scenario(
        id=data["id"],
        title=data["title"],
        rules=tuple(data["rules"]),
        roles=dict(data["roles"]),
        procedure=data["procedure"].strip(),
        steps=tuple(data["steps"]),
        path=path,
        catches=tuple(data.get("catches", [])),
        tags=tuple(data.get("tags", [])),
        needs=_needs(data["roles"], data["steps"]),
        clauses=clauses,
    )


def load_all(directory: Path = SCENARIO_DIR) -> list[Scenario]:
    """Every scenario under `directory`, in id order; ids must be unique."""
    files = sorted(p for p in directory.rglob("*.yaml") if p.is_file())
    if not files:
        raise UsageError(f"no scenarios found under {directory}")
    loaded: dict[str, Scenario] = {}
    for path in files:
        scenario = load_file(path)
        if scenario.id in loaded:
            raise UsageError(f"{path}:1: id '{scenario.id}' is also used by {loaded[scenario.id].path}")
        loaded[scenario.id] = scenario
    return sorted(loaded.values(), key=lambda s: s.id)


def select(scenarios: list[Scenario], patterns: list[str] | None) -> list[Scenario]:
    """Scenarios whose id matches one of the glob patterns (all when none given)."""
    if not patterns:
        return scenarios
    import fnmatch

    patterns = [p.strip() for p in patterns if p.strip()]
    if not patterns:
        raise UsageError("--scenarios is empty: give scenario id globs, e.g. --scenarios 'rr-pair-*'")
    # Every pattern must match: a typo in one of several would otherwise narrow a run silently.
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(s.id, p) for s in scenarios)]
    if unmatched:
        raise UsageError(f"no scenario id matches {', '.join(repr(p) for p in unmatched)}; "
                         f"scenario ids: {', '.join(s.id for s in scenarios)}")
    return [s for s in scenarios if any(fnmatch.fnmatchcase(s.id, p) for p in patterns)]
