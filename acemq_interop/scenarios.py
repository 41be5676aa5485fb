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

from . import catalogue as spec
from .errors import UsageError
from .paths import SCENARIOS_DIR

SCENARIO_DIR = SCENARIOS_DIR
SCHEMA_PATH = SCENARIO_DIR / "scenario.schema.json"

# What each step asks of the peer filling a role: a role without the capability is SKIPped.
_CAPABILITY_OF_STEP = {"responder": "respond", "requester": "request"}


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    rules: tuple[str, ...]
    roles: dict[str, str]  # role -> peer | probe | all-peers
    procedure: str
    steps: tuple[dict[str, Any], ...]
    path: Path
    catches: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    needs: dict[str, frozenset[str]] = field(default_factory=dict)  # role -> capabilities

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
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
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
    needs: dict[str, set[str]] = {role: set() for role in roles}
    requester_role: dict[str, str] = {}
    for step in steps:
        (kind, args), = step.items()
        if kind in _CAPABILITY_OF_STEP:
            needs[args["role"]].add(_CAPABILITY_OF_STEP[kind])
            if kind == "requester":
                requester_role[args["as"]] = args["role"]
        elif kind == "gather" and args["requester"] in requester_role:
            needs[requester_role[args["requester"]]].add("gather")
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
        elif known_mutants[mutant].rule not in data["rules"]:
            fail(["catches", i], f"mutant '{mutant}' breaks {known_mutants[mutant].rule}, which this scenario does not list in rules")
    bound: set[str] = set()
    for i, step in enumerate(data["steps"]):
        (kind, args), = step.items()
        if isinstance(args, dict):
            role = args.get("role")
            if role is not None and role not in data["roles"]:
                fail(["steps", i, kind, "role"], f"role '{role}' is not declared in roles ({', '.join(data['roles'])})")
            if role is not None and data["roles"][role] == "probe":
                fail(["steps", i, kind, "role"], f"role '{role}' is played by the probe; use probe_* steps for it")
            for ref in ("requester", "of"):
                if kind in ("request", "gather", "counters", "wait_event") and ref in args and args[ref] not in bound:
                    fail(["steps", i, kind, ref], f"'{args[ref]}' is used before a step names it with as:")
            rule = args.get("rule")
            if rule is not None and rule not in data["rules"]:
                fail(["steps", i, kind, "rule"], f"step checks {rule}, which is not in this scenario's rules")
            if "as" in args:
                bound.add(args["as"])
        if kind == "expect":
            for j, expectation in enumerate(args):
                if expectation["rule"] not in data["rules"]:
                    fail(["steps", i, kind, j, "rule"], f"expectation checks {expectation['rule']}, which is not in this scenario's rules")
                head = expectation["that"].split(".")[0]
                if head not in bound:
                    fail(["steps", i, kind, j, "that"], f"'{head}' is not named by an earlier step (as:)")
        if kind in ("await", "stop_responder", "close_requester"):
            for name in args if isinstance(args, list) else [args]:
                if name not in bound:
                    fail(["steps", i, kind], f"'{name}' is not named by an earlier step (as:)")


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

    chosen = [s for s in scenarios if any(fnmatch.fnmatchcase(s.id, p) for p in patterns)]
    if not chosen:
        raise UsageError(f"no scenario id matches {', '.join(patterns)} (see `acemq-interop list`)")
    return chosen
