"""Loading `scenarios/**/*.yaml` (and `.yml`): read strictly, schema-checked, file and line for every problem.

Everything is loaded and checked before anything runs: one bad file stops the run with
its path, line and what is wrong, so a run never goes ahead half-loaded.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn, Sequence

import jsonschema
import yaml

from . import assertions
from . import catalogue as spec
from . import strict_yaml
from ..core.errors import UsageError
from ..core.paths import SCENARIOS_DIR
from .schema import scenario_schema
from .steps import (BROKER_CONTROL_STEPS, BUILT_INS, CALLS, CONNECTION_STEPS, COMPARISONS, NODE_STEPS, STEP_KINDS,
                    StepKind, _uses_of)
from .strict_yaml import line_at, refuse, shown

SCENARIO_DIR = SCENARIOS_DIR
# Generated from the step registry (acemq_interop/spec/steps.py) for editors; the loader uses the registry's.
SCHEMA_PATH = SCENARIO_DIR / "scenario.schema.json"


@dataclass(frozen=True)
class Step:
    """One step of a scenario, parsed once by the loader (after the schema and before any
    other check): the loader's checks, the engine and the duration estimate all read this,
    never the YAML mapping again."""

    index: int  # 0-based, in the file's order (a refusal's path in the file: ["steps", index, kind])
    kind: str  # the step kind's name (a key of STEP_KINDS)
    args: Any  # its argument as written: a mapping, a name or a list of names, or the expectations

    @property
    def bound_name(self) -> str | None:
        """The name its `as:` binds, if any."""
        return str(self.args["as"]) if isinstance(self.args, dict) and "as" in self.args else None

    def waits_s(self) -> float:
        """The seconds its `*_ms` arguments add up to (the duration estimate's part)."""
        def waits(value: Any) -> float:
            if isinstance(value, dict):
                return sum(float(v) / 1000 if k.endswith("_ms") and isinstance(v, (int, float)) and not isinstance(v, bool)
                           else waits(v) for k, v in value.items())
            if isinstance(value, list):
                return sum(waits(v) for v in value)
            return 0.0

        return waits(self.args)


def parse_steps(raw: list[dict[str, Any]]) -> tuple[Step, ...]:
    """The schema-valid `steps:` list as Step values (each a one-key mapping in the file)."""
    return tuple(Step(index, *next(iter(step.items()))) for index, step in enumerate(raw))


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    rules: tuple[str, ...]  # the rules of `clauses`, in order (derived; a file that lists them is held to them)
    roles: dict[str, str]  # role -> peer | probe | all-peers
    procedure: str
    steps: tuple[Step, ...]  # parsed once by the loader
    path: Path
    catches: tuple[str, ...] = ()
    # Mutants whose defect its checks may see only by chance (a window of one round trip): a
    # FAIL of one names its clause, a PASS is no miss; another scenario catches it every time.
    may_catch: tuple[str, ...] = ()
    # It holds a queue on the broker (broker/control.py): a SKIP on a broker given by URL.
    broker_control: bool = False
    # It ends and watches a role's connection through the management API (drop_connection,
    # wait_recovered): a SKIP where the API does not offer connections.
    connection_control: bool = False
    needs: dict[str, frozenset[str]] = field(default_factory=dict)  # role -> capabilities
    min_protocol: int = 1  # the oldest peer protocol its steps can be driven with (a `type` needs 3)
    # A cluster scenario (`nodes: 3`): the nodes it needs; selected by `run --cluster N` only,
    # a SKIP on a run with fewer. `node_faults`: it stops or kills nodes, so its cells run alone.
    nodes: int = 1
    node_faults: bool = False
    # Derived from the checks, in the order they first appear: every clause a check asserts
    # (`rule:`) or names as the one broken (`consequence_of:`).
    clauses: tuple[str, ...] = ()
    # Derived from the steps: role -> the binding objects (`requester`, `responder`) its peer opens.
    opens: dict[str, frozenset[str]] = field(default_factory=dict)
    # Derived: the role whose peer each check judges, by (step index, check index): the
    # role a FAIL of that check is charged to (never a probe role; the loader refuses one).
    charges: dict[tuple[int, int], str] = field(default_factory=dict)
    # Derived: the role behind each name a step binds (a requester, a responder, a call).
    name_roles: dict[str, str] = field(default_factory=dict)
    # Derived: (role, optional part) -> the clauses its checks cannot judge without that part
    # (PARTS): a peer declaring it lacks the part FAILs them at once.
    part_clauses: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    # Derived: step index -> (role, part) of every step that needs an optional part.
    part_steps: dict[int, tuple[str, str]] = field(default_factory=dict)
    # Clauses its checks presume of the peer they judge, judged by other scenarios
    # (presumptions.py): a failure here by a peer that broke one of them is that clause.
    assumes: tuple[str, ...] = ()

    def mutant_acts(self, role: str, mutant: str) -> bool:
        """Whether a peer playing `role` with `mutant` runs the mutant's code here: a responder
        mutant on a role that only opens requesters is the clean binding, cell for cell."""
        known = spec.mutants().get(mutant)
        return known is None or known.opened_as in self.opens.get(role, frozenset())

    @property
    def estimate_s(self) -> float:
        """How long a cell of this scenario takes, roughly, from the waits its steps name.

        Used to start long cells first and to balance shards when no earlier run's
        durations are given; it never decides a result.
        """
        return 0.1 + sum(step.waits_s() for step in self.steps)

    @property
    def level(self) -> str:
        """The conformance level its cells count under (LEVELS): scatter-gather when it
        gathers; request/reply full when it needs an optional part; else request/reply core."""
        if any(step.kind == "gather" for step in self.steps):
            return LEVELS[2]
        return LEVELS[1] if self.part_clauses else LEVELS[0]

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


SUFFIXES = (".yaml", ".yml")
_TEMPLATE = re.compile(r"\$\{([^}]*)\}")


def _needs(roles: dict[str, str], steps: Sequence[Step]) -> dict[str, frozenset[str]]:
    """What each role's peer must offer, from the capability of each step kind (a role without it SKIPs)."""
    needs: dict[str, set[str]] = {role: set() for role in roles}
    role_of: dict[str, str] = {}  # a name bound by a step with a role -> that role
    for step in steps:
        name, args = step.kind, step.args
        kind = STEP_KINDS[name]
        role = args.get("role") if kind.role else None
        if kind.capability_via:
            role = role_of.get(args.get(kind.capability_via))
        if kind.capability and role is not None:
            needs[role].add(kind.capability)
        if kind.role and kind.binds:
            role_of[args["as"]] = args["role"]
    return {role: frozenset(caps) for role, caps in needs.items()}


OPENING_STEPS = ("requester", "responder")


def _opens(roles: dict[str, str], steps: Sequence[Step]) -> dict[str, frozenset[str]]:
    """Which binding objects each role's peer opens and uses: `requester` and `responder`
    (their steps), and `gatherer` where a `gather` step runs on one of its requesters."""
    opens: dict[str, set[str]] = {role: set() for role in roles}
    role_of: dict[str, str] = {}
    for step in steps:
        name, args = step.kind, step.args
        if name in OPENING_STEPS:
            opens[args["role"]].add(name)
            role_of[args["as"]] = args["role"]
        elif name == "gather" and args.get("requester") in role_of:
            opens[role_of[args["requester"]]].add("gatherer")
    return {role: frozenset(objects) for role, objects in opens.items()}


def _schema_problem(error: jsonschema.ValidationError) -> tuple[list[Any], str]:
    """Where a schema error is and what it says: the registry's own words when it has them, the value cut short."""
    found: jsonschema.ValidationError | None = error
    while found is not None:  # the nearest schema with an `errorMessage` says it best
        if isinstance(found.schema, dict) and "errorMessage" in found.schema:
            path = list(found.absolute_path)
            return path, f"{'/'.join(map(str, path)) or '(top)'}: {found.schema['errorMessage']}"
        found = found.parent
    path = list(error.absolute_path)
    message = error.message
    whole = repr(error.instance)
    if len(whole) > 60:  # jsonschema quotes the whole value, which can be most of the file
        message = message.replace(whole, shown(error.instance))
    return path, f"{'/'.join(map(str, path)) or '(top)'}: {message}"


def _strings(value: Any, path: list[Any]) -> Iterator[tuple[list[Any], str]]:
    """Every text below a value (keys included: they are never expanded), with its path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield [*path, key], key
            yield from _strings(item, [*path, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, [*path, index])


class _Names:
    """The names a scenario binds, step by step, and the check of every use of one."""

    def __init__(self, fail: Callable[[list[Any], str], NoReturn]):
        self.fail = fail
        self.bound: dict[str, str] = {name: "built-in" for name in BUILT_INS}  # name -> the step kind that bound it
        self.pending: dict[str, tuple[str, list[Any]]] = {}  # an async call not awaited yet -> (its kind, where)

    def bind(self, name: str, kind: StepKind, args: dict[str, Any], at: list[Any]) -> None:
        if name in BUILT_INS:
            self.fail([*at, "as"], f"'{name}' is a built-in name (the cell's namespace): name the step otherwise")
        if name in self.bound or name in self.pending:
            self.fail([*at, "as"], f"'{name}' is already named by an earlier step: give this one another name")
        if kind.deferred_by and args.get(kind.deferred_by):
            self.pending[name] = (kind.name, [*at, "as"])
        else:
            self.bound[name] = kind.name

    def use(self, name: str, kinds: tuple[str, ...], at: list[Any], what: str) -> None:
        """A step argument naming an earlier step (`requester: q`, `of: r`, `await: a`...)."""
        if what == "await":
            if name in self.pending:
                self.bound[name] = self.pending.pop(name)[0]
                return
            if self.bound.get(name) in CALLS:
                self.fail(at, f"'{name}' is not waiting: only a request or gather with async: true is awaited, once")
        self.path(name, at, extra=(), label=None)
        if self.bound[name] not in kinds:
            self.fail(at, f"'{name}' names a {self.bound[name]} step; {what} takes a {' or '.join(kinds)}")

    def path(self, path: str, at: list[Any], extra: tuple[str, ...], label: str | None) -> None:
        """A dotted path into what steps named (`that:`, or inside `${...}`): its head bound, its field known."""
        head, *rest = path.split(".")
        said = f"{shown(label)}: " if label else ""
        if head in extra:
            if rest:
                self.fail(at, f"{said}{head} is a plain value here, it has no fields")
            return
        if head in self.pending:
            self.fail(at, f"{said}'{head}' is an async call not awaited yet: add `await: {head}` before this step")
        if head not in self.bound:
            self.fail(at, f"{said}{shown(head)} is not named by an earlier step (as:)")
        kind = self.bound[head]
        if kind == "built-in" and rest:
            self.fail(at, f"{said}{head} is a plain value, it has no fields")
        fields = STEP_KINDS[kind].fields if kind in STEP_KINDS else ()
        if fields and rest and rest[0] not in fields:
            self.fail(at, f"{said}a {kind} step names {{{', '.join(fields)}}}, not {shown(rest[0])}")

    def templates(self, value: Any, at: list[Any], extra: tuple[str, ...] | None, where: str) -> None:
        """Every `${...}` in a value; `extra` is None where the run does not expand them."""
        for path, text in _strings(value, at):
            if "${" not in text:
                continue
            if extra is None:
                self.fail(path, f"{shown(text)}: ${{...}} is not expanded in {where}; write the value itself")
            if "${" in _TEMPLATE.sub("", text):
                self.fail(path, f"{shown(text)}: a ${{ without its }}: write ${{name.field}}")
            for reference in _TEMPLATE.findall(text):
                if not reference.strip():
                    self.fail(path, f"{shown(text)}: an empty ${{}}: name what it stands for")
                self.path(reference, path, extra, label=f"${{{reference}}}")


# A name the run sends to the broker behind the cell's namespace (`c0007.` + name): a queue,
# an exchange, a requester's or responder's `as:`. AMQP's short strings hold 255 bytes.
MAX_NAME_BYTES = 200
_NAME_KEYS = ("name", "queue", "endpoint", "exchange", "as")


def _broker_names(args: Any) -> Iterator[tuple[list[Any], str]]:
    if not isinstance(args, dict):
        return
    for key in _NAME_KEYS:
        if isinstance(args.get(key), str):
            yield [key], args[key]
    bind = args.get("bind")
    if isinstance(bind, dict) and isinstance(bind.get("exchange"), str):
        yield ["bind", "exchange"], bind["exchange"]


def _check_semantics(data: dict[str, Any], root: yaml.Node | None, where: Path) -> None:
    """What the schema cannot say: known rule ids and mutants, roles declared and played, names
    bound before use and used as what they are, templates that name something, regexes that compile."""
    known_rules = spec.rules()
    known_mutants = spec.mutants()

    def fail(path: list[Any], message: str) -> NoReturn:
        raise refuse(where, line_at(root, path), message)

    for i, rule in enumerate(data.get("rules", [])):
        if rule not in known_rules:
            fail(["rules", i], f"rule {rule} is not in docs/wire-spec.md (known: {', '.join(known_rules)})")
    for key in ("catches", "may_catch"):
        for i, mutant in enumerate(data.get(key, [])):
            if mutant not in known_mutants:
                fail([key, i], f"mutant {shown(mutant)} is not in the wire spec's mutant catalogue")
    for i, mutant in enumerate(data.get("may_catch", [])):
        if mutant in data.get("catches", []):
            fail(["may_catch", i], f"mutant {shown(mutant)} is in catches: too; a scenario catches a mutant or may catch it")
    roles: dict[str, str] = data["roles"]
    played: set[str] = set()
    names = _Names(fail)
    for i, step in enumerate(data["steps"]):
        name, args = step.kind, step.args
        kind = STEP_KINDS[name]
        at = ["steps", i, name]
        if kind.role:
            role = args["role"]
            if role not in roles:
                fail([*at, "role"], f"role '{role}' is not declared in roles ({', '.join(roles)})")
            if roles[role] == "probe":
                fail([*at, "role"], f"role '{role}' is played by the probe; use probe_* steps for it")
            if roles[role] not in kind.plays:
                fail([*at, "role"], f"role '{role}' is {roles[role]}; a {name} step's role is {' or '.join(kind.plays)}")
            played.add(role)
        for path, used, kinds in _uses_of(kind, args):
            names.use(used, kinds, [*at, *path], path[0] if path and isinstance(path[0], str) else name)
        if isinstance(args, dict):
            for key, value in args.items():
                if key not in kind.uses and key not in ("as", "role"):
                    names.templates(value, [*at, key], kind.templates.get(key), key)
        if kind.asserts == "expectations":
            for j, expectation in enumerate(args):
                names.path(expectation["that"], [*at, j, "that"], extra=(), label=None)
                for op in COMPARISONS:
                    if op in expectation:
                        names.templates(expectation[op], [*at, j, op], (), op)
                pattern = expectation.get("matches")
                if isinstance(pattern, str) and "${" not in pattern:
                    problem = assertions.regex_problem(pattern)
                    if problem:
                        fail([*at, j, "matches"], f"matches: {shown(pattern)}: {problem}")
        for path, value in _broker_names(args):
            size = len(value.encode("utf-8"))
            if size > MAX_NAME_BYTES:
                fail([*at, *path], f"a name of {size} bytes: the broker takes 255 with the cell's namespace "
                                   f"(c0007.) in front; keep a queue, exchange or step name to {MAX_NAME_BYTES}")
        if kind.binds and isinstance(args, dict) and "as" in args:
            names.bind(args["as"], kind, args, at)
    for waiting, (kind_name, at) in names.pending.items():
        fail(at, f"the {kind_name} '{waiting}' is async and never awaited: add `await: {waiting}` after it")
    for role, who in roles.items():
        if who != "probe" and role not in played:
            fail(["roles", role], f"role '{role}' is played by no step, so it would only multiply the cells: "
                                  f"remove it or give it to a step's role:")


def _clauses_of(data: dict[str, Any], root: yaml.Node, where: Path) -> tuple[str, ...]:
    """The clauses the scenario's checks assert, checked against the catalogue and its lists.

    Every check names a clause of the catalogue (never a bare rule, never none); the listed
    `rules:` are exactly the rules of those clauses; every mutant in `catches:` breaks one
    of them. Each problem is refused with file:line.
    """
    cat = spec.catalogue()
    known = cat.clauses

    def fail(path: list[Any], message: str) -> NoReturn:
        raise refuse(where, line_at(root, path), message)

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
        name, args = step.kind, step.args
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
    # `rules:` is derived from the checks; a scenario that still lists them is held to them.
    listed = list(data.get("rules", dict.fromkeys(spec.rule_of(c) for c in found)))
    for clause_id, path in found.items():
        if spec.rule_of(clause_id) not in listed:
            fail(path, f"a check asserts {clause_id}, whose rule {spec.rule_of(clause_id)} is not in this scenario's rules")
    asserted_rules = {spec.rule_of(c) for c in found}
    for i, rule in enumerate(listed):
        if rule not in asserted_rules:
            fail(["rules", i], f"rule {rule} is listed but no check asserts a clause of it: add a check naming one of "
                               f"{', '.join(c.id for c in cat.rules[rule].clauses)}, or drop it from rules")
    for i, presumed in enumerate(data.get("assumes", [])):
        # A clause the scenario also asserts may be presumed: a presumption only renames a
        # failure of another clause (rr-responder-header-only checks where its reply goes,
        # RR-4.1, and presumes the responder replies at all, RR-4.1, judged elsewhere).
        clause(["assumes", i], str(presumed), "assumes:")
    for key, i, name in [*(("catches", i, n) for i, n in enumerate(data.get("catches", []))),
                         *(("may_catch", i, n) for i, n in enumerate(data.get("may_catch", [])))]:
        mutant = cat.mutants[name]
        if mutant.clause not in found:
            fail([key, i], f"mutant '{name}' breaks {mutant.clause}, which no check of this scenario asserts"
                                 + (f" (it asserts {', '.join(sorted(c for c in found if spec.rule_of(c) == mutant.rule))})"
                                    if any(spec.rule_of(c) == mutant.rule for c in found) else ""))
        opened = set().union(*_opens(data["roles"], data["steps"]).values())
        if mutant.opened_as not in opened:
            fail([key, i], f"mutant '{name}' lives on a {mutant.opened_as}, which no step of this scenario opens: "
                                 f"its cells would run the clean binding")
    return tuple(found)


# What a partial binding may declare it lacks (hello `lacks`), and the levels a peer is
# reported at: a binding without counters can still be request/reply core conformant.
PARTS = ("counters", "events", "dead_lettering")
LEVELS = ("request/reply core", "request/reply full", "scatter-gather")


def _part_of(name: str, args: Any) -> str | None:
    if name in ("counters", "wait_counters"):
        return "counters"
    if name == "wait_event":
        return "dead_lettering" if isinstance(args, dict) and args.get("event") == "dead_lettered" else "events"
    if name in ("probe_get", "probe_count") and isinstance(args, dict) and str(args.get("queue", "")).endswith(".dlq"):
        return "dead_lettering"
    return None


def _part_steps(roles: dict[str, str], steps: Sequence[Step]) -> dict[int, tuple[str, str]]:
    """Step index -> (role, part) for every step that needs an optional part of a peer's binding."""
    name_roles = _name_roles(steps)
    responders = [r for r, o in _opens(roles, steps).items() if "responder" in o]
    found: dict[int, tuple[str, str]] = {}
    for i, step in enumerate(steps):
        name, args = step.kind, step.args
        part = _part_of(name, args)
        if part is None:
            continue
        role = name_roles.get(str(args.get("of"))) if isinstance(args, dict) and args.get("of") else (
            responders[0] if len(responders) == 1 else None)
        if role is not None and roles.get(role) != "probe":
            found[i] = (role, part)
    return found


def _part_clauses(roles: dict[str, str], steps: Sequence[Step]) -> dict[tuple[str, str], tuple[str, ...]]:
    """Which clauses each optional part carries, per role: the checks of the steps that need
    it, and the checks reading what those steps bound."""
    name_roles = _name_roles(steps)
    opens = _opens(roles, steps)
    responders = [r for r, o in opens.items() if "responder" in o]
    found: dict[tuple[str, str], list[str]] = {}
    needing: dict[str, tuple[str, str]] = {}  # a name bound by such a step -> (role, part)
    for step in steps:
        name, args = step.kind, step.args
        kind = STEP_KINDS[name]
        part = _part_of(name, args)
        if part is not None:
            role = name_roles.get(str(args.get("of"))) if isinstance(args, dict) and args.get("of") else (
                responders[0] if len(responders) == 1 else None)
            if role is not None and roles.get(role) != "probe":
                clauses = found.setdefault((role, part), [])
                clauses += [str(c.get("consequence_of") or c["rule"]) for _, c in kind.checks(args)]
                if isinstance(args, dict) and "as" in args:
                    needing[str(args["as"])] = (role, part)
        if name == "expect":
            for _, check in kind.checks(args):
                heads = [str(check.get("that", "")).split(".")[0],
                         *[p.split(".")[0] for p in _TEMPLATE.findall(str({k: v for k, v in check.items() if k != "that"}))]]
                for head in heads:
                    if head in needing:
                        found.setdefault(needing[head], []).append(str(check.get("consequence_of") or check["rule"]))
    return {key: tuple(dict.fromkeys(clauses)) for key, clauses in found.items() if clauses}


def _name_roles(steps: Sequence[Step]) -> dict[str, str]:
    """The role behind each name a step binds: a requester's or responder's own role, a call's
    requester's role. Names the probe binds (probe_get, queue_facts...) have none."""
    found: dict[str, str] = {}
    for step in steps:
        name, args = step.kind, step.args
        if not isinstance(args, dict) or "as" not in args:
            continue
        if name in OPENING_STEPS:
            found[args["as"]] = args["role"]
        elif name in ("request", "gather") and args.get("requester") in found:
            found[args["as"]] = found[args["requester"]]
        elif args.get("of") in found:  # counters, events: of that requester or responder
            found[args["as"]] = found[args["of"]]
    return found


# The binding object a clause's side is kept by: who a check of it judges.
SIDE_OBJECTS = {"requester": ("requester", "gatherer"), "gatherer": ("gatherer", "requester"), "responder": ("responder",)}


def _check_subject(kind: StepKind, args: Any, check: dict[str, Any]) -> str | None:
    """The name a check looks at: an expectation's path head, or a step's `of`."""
    if kind.asserts == "expectations":
        return str(check.get("that", "")).split(".")[0]
    return str(args.get("of")) if isinstance(args, dict) and args.get("of") else None


def _charges(data: dict[str, Any], root: yaml.Node, where: Path) -> dict[tuple[int, int], str]:
    """The role each check judges (a FAIL of it is charged to that role's peer).

    In order: the check's own `charges: ROLE`; the role behind the name it looks at, when
    that name is a binding object of the side its clause obliges (`counters of old`, a
    responder, for a responder clause); the one role whose peer opens what the clause's side
    keeps; for a clause of `either` side, the one role a peer plays. Anything else, or a
    probe role, is refused with file:line: the check must say whom it judges.
    """
    cat = spec.catalogue()
    roles: dict[str, str] = data["roles"]
    steps = data["steps"]
    opens = _opens(roles, steps)
    name_roles = _name_roles(steps)
    bound_kind: dict[str, str] = {}
    for step in steps:
        name, args = step.kind, step.args
        if isinstance(args, dict) and "as" in args:
            bound_kind[args["as"]] = ("gatherer" if name == "gather" else "requester" if name == "request"
                                      else bound_kind.get(args.get("of"), name) if args.get("of") else name)
    peer_roles = [r for r, k in roles.items() if k != "probe"]
    found: dict[tuple[int, int], str] = {}
    for i, step in enumerate(steps):
        name, args = step.kind, step.args
        kind = STEP_KINDS[name]
        for j, (sub, check) in enumerate(kind.checks(args)):
            at = ["steps", i, name, *sub]
            clause_id = str(check.get("consequence_of") or check["rule"])
            clause = cat.clauses.get(clause_id)
            if clause is None:
                continue  # _clauses_of refuses it
            owner = check if kind.asserts == "expectations" else (args if isinstance(args, dict) else {})
            for g, guarded in enumerate(owner.get("guards") or ()):
                if str(guarded).split(".")[0] not in bound_kind:
                    raise refuse(where, line_at(root, [*at[:3], *([sub[0]] if kind.asserts == "expectations" else []), "guards", g]),
                                 f"guards: {guarded} names no step's `as:` in this scenario")
            given = check.get("charges") if kind.asserts == "expectations" else (args.get("charges") if isinstance(args, dict) else None)
            role: str | None = None
            if given is not None:
                if given not in roles:
                    raise refuse(where, line_at(root, at), f"charges: {given} is not a role of this scenario ({', '.join(roles)})")
                role = str(given)
            else:
                subject = _check_subject(kind, args, check)
                objects = SIDE_OBJECTS.get(clause.side, ())
                if subject in name_roles and (clause.side == "either" or bound_kind.get(subject) in objects):
                    role = name_roles[subject]
                else:
                    keepers = peer_roles if clause.side == "either" else [
                        r for r in roles if opens.get(r, frozenset()) & set(objects)]
                    if len(keepers) == 1:
                        role = keepers[0]
                    else:
                        raise refuse(where, line_at(root, at),
                                     f"a check of {clause_id} (obliging the {clause.side}) could judge "
                                     f"{' or '.join(keepers) or 'no role'}: say whose side broke it with charges: ROLE")
            if roles.get(role) == "probe":
                raise refuse(where, line_at(root, at),
                             f"a check of {clause_id} (obliging the {clause.side}) judges role {role}, which the probe plays: "
                             f"the probe is never charged; name the clause the peer breaks (consequence_of:)")
            found[(i, j)] = role
    return found


def load_file(path: Path) -> Scenario:
    """One scenario file, checked whole; UsageError `path:line: problem` for the first thing wrong."""
    data, root = strict_yaml.read(path)
    if root is None or not isinstance(data, dict):
        raise refuse(path, 1, "a scenario is a mapping with id, title, roles, procedure and steps")
    error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if error is not None:
        at, problem = _schema_problem(error)
        raise refuse(path, line_at(root, at), f"{problem} (see docs/scenarios.md for the scenario format)")
    if data["id"] != path.stem:
        raise refuse(path, line_at(root, ["id"]), f"id '{data['id']}' is not the file's name: name the file "
                                                  f"{data['id']}{path.suffix}, or the id {shown(path.stem)}")
    # From here `steps` holds Step values: parsed once, read by every check below and the run.
    data = {**data, "steps": parse_steps(data["steps"])}
    _check_semantics(data, root, path)
    _check_protocol(data, root, path)
    clauses = _clauses_of(data, root, path)
    charges = _charges(data, root, path)
    return Scenario(
        id=data["id"],
        title=data["title"],
        rules=tuple(data.get("rules") or dict.fromkeys(spec.rule_of(c) for c in clauses)),
        roles=dict(data["roles"]),
        procedure=data["procedure"].strip(),
        steps=data["steps"],
        path=path,
        catches=tuple(data.get("catches", [])),
        may_catch=tuple(data.get("may_catch", [])),
        broker_control=any(step.kind in BROKER_CONTROL_STEPS for step in data["steps"]),
        connection_control=any(step.kind in CONNECTION_STEPS for step in data["steps"]),
        needs=_needs(data["roles"], data["steps"]),
        opens=_opens(data["roles"], data["steps"]),
        min_protocol=int(data.get("min_protocol", 1)),
        nodes=int(data.get("nodes", 1)),
        node_faults=any(step.kind in NODE_STEPS for step in data["steps"]),
        clauses=clauses,
        charges=charges,
        name_roles=_name_roles(data["steps"]),
        part_clauses=_part_clauses(data["roles"], data["steps"]),
        part_steps=_part_steps(data["roles"], data["steps"]),
        assumes=tuple(data.get("assumes", [])),
    )


# What only a peer of protocol 3 understands: a `type` on a request or gather, the `closed` outcome.
PROTOCOL_3_STEP_KEYS = {"request": ("type",), "gather": ("type",)}
PROTOCOL_3_OUTCOMES = ("closed",)


# What only a peer of protocol 5 gives: a connection of its own per role, named (the steps
# that end and watch it), and the `connection_lost` outcome of a call.
PROTOCOL_5_OUTCOMES = ("connection_lost",)


def _check_protocol(data: dict[str, Any], root: Any, path: Path) -> None:
    """A scenario using a protocol-3 (or 5) feature says `min_protocol: 3` (5), so an older
    peer is skipped with that reason instead of failing on a field it never heard of."""
    for index, step in enumerate(data["steps"]):
        if step.kind in NODE_STEPS and data.get("nodes", 1) < 2:
            raise refuse(path, line_at(root, ["steps", index, step.kind]),
                         f"{step.kind} faults a node of a cluster: add `nodes: 3` to the scenario (run --cluster 3 selects it)")
    if data.get("min_protocol", 1) < 5:
        for index, step in enumerate(data["steps"]):
            if step.kind in CONNECTION_STEPS:
                raise refuse(path, line_at(root, ["steps", index, step.kind]),
                             f"{step.kind} needs peer protocol 5 (each role's connection named): add `min_protocol: 5` to the scenario")
            if step.kind == "expect":
                for j, expectation in enumerate(step.args):
                    if expectation.get("equals") in PROTOCOL_5_OUTCOMES:
                        raise refuse(path, line_at(root, ["steps", index, step.kind, j]),
                                     f"the outcome `{expectation['equals']}` needs peer protocol 5: add `min_protocol: 5` to the scenario")
    if data.get("min_protocol", 1) >= 3:
        return
    for index, step in enumerate(data["steps"]):
        kind, args = step.kind, step.args
        for key in PROTOCOL_3_STEP_KEYS.get(kind, ()):
            if isinstance(args, dict) and key in args:
                raise refuse(path, line_at(root, ["steps", index, kind, key]),
                             f"`{key}` on a {kind} needs peer protocol 3: add `min_protocol: 3` to the scenario")
        if kind == "expect":
            for j, expectation in enumerate(args):
                if expectation.get("equals") in PROTOCOL_3_OUTCOMES:
                    raise refuse(path, line_at(root, ["steps", index, kind, j]),
                                 f"the outcome `{expectation['equals']}` needs peer protocol 3: add `min_protocol: 3` to the scenario")


def scenario_files(directory: Path) -> list[Path]:
    """Every scenario file under `directory`: `.yaml` and `.yml` alike."""
    return sorted(p for p in directory.rglob("*") if p.suffix in SUFFIXES and p.is_file())


def load_all(directory: Path = SCENARIO_DIR, extra: list[Path] | tuple[Path, ...] = ()) -> list[Scenario]:
    """Every scenario under `directory` and under each `extra` folder (`--scenario-dir`: a
    binding's own scenarios, run beside the suite's), in id order; ids must be unique across
    all of them, so a binding's scenario never shadows the suite's."""
    loaded: dict[str, Scenario] = {}
    for folder in (directory, *extra):
        if folder != directory and not folder.is_dir():
            raise UsageError(f"--scenario-dir {folder}: no such folder")
        files = scenario_files(folder)
        if not files:
            raise UsageError(f"no scenarios found under {folder}: scenario files end in .yaml or .yml")
        for path in files:
            scenario = load_file(path)
            if scenario.id in loaded:
                raise UsageError(f"{path}:1: id '{scenario.id}' is also used by {loaded[scenario.id].path}: ids are unique")
            loaded[scenario.id] = scenario
    return sorted(loaded.values(), key=lambda s: s.id)


def by_default(scenarios: list[Scenario], cluster: int = 0) -> list[Scenario]:
    """What a run selects when it names no scenario: with `--cluster N` the cluster scenarios
    (`nodes:` more than 1, at most N), without it every other one (a cluster scenario on one
    node could only SKIP)."""
    return [s for s in scenarios if (s.nodes > 1) == bool(cluster) and s.nodes <= max(cluster, 1)]


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
