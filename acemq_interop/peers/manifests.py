"""Peer manifests: discovery of `peers/*/peer.yaml` and the peer specs users write.

A peer is described entirely by its manifest; nothing in the harness names a language.
"""
from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..spec.catalogue import mutants as catalogue_mutants
from ..core.errors import UsageError
from .limits import LIMITS_SCHEMA, Limits

from ..core.paths import DATA_ROOT as REPO_ROOT, PEER_PATH_ENV, PEERS_DIR, peer_path_from_env

_SPEC_RE = re.compile(r"^(?P<name>[a-z][a-z0-9_-]*)(@(?P<profile>[A-Za-z0-9._-]+))?(?P<mutants>(\+[a-z0-9-]+)*)$")


@dataclass(frozen=True)
class Manifest:
    """One peer's `peer.yaml`, with its paths resolved."""

    name: str
    language: str
    description: str
    folder: Path
    cwd: Path
    run: tuple[str, ...]
    build: tuple[tuple[str, ...], ...]
    test: tuple[tuple[str, ...], ...]
    env: dict[str, str]
    requires: tuple[str, ...]
    docker: dict[str, Any] = field(default_factory=dict)
    # Where the binding and the adapter live (globs relative to the folder): the binding is
    # what a service would adopt, so it must carry no mutant and no test knob (a test greps).
    layout: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # What `doctor` checks: each entry names a tool or library, the command that shows its
    # version (or proves it is there), the least version, and how to get it two ways.
    toolchain: tuple[dict[str, Any], ...] = ()
    image: str | None = None  # set for a peer given as NAME=IMAGE: it runs from that image
    # Set for a stack that is not acemq (foreign/*/peer.yaml): `stack` names it as a reader
    # knows it, `expected` is the file of its ground truth (written before its first run).
    # Its cells are kept out of the conformance tables and make the foreign-interop matrix.
    foreign: dict[str, str] = field(default_factory=dict)
    # What the peer may take of the machine (peers/limits.py: each limit, its default, and
    # what a peer past it gets).
    limits: Limits = field(default_factory=Limits)

    @property
    def is_foreign(self) -> bool:
        return bool(self.foreign)

    def missing_tools(self) -> list[str]:
        """Commands the manifest requires that are not on PATH."""
        return [tool for tool in self.requires if shutil.which(tool) is None]

    def argv(self, argv: tuple[str, ...]) -> list[str]:
        return [sys.executable if part == "{python}" else part for part in argv]

    def docker_run(self, run_id: str | None = None, mounts: tuple[Path, ...] | list[Path] = ()) -> list[str]:
        """The same peer from its image: the harness only sees a process with pipes.

        Host networking keeps the broker URL the harness hands over in `hello` valid; the
        run label lets the run (and `doctor --clean`) remove a container whose CLI was
        killed; nothing is pulled (a missing image is a SKIP before this is run). Each of
        `mounts` (a TLS run's CA folder) is seen read-only at the same path inside, so the
        `tls.ca_file` of `hello` names the same file there.
        """
        image = self.docker.get("image")
        if not image:
            raise UsageError(f"{self.folder}/peer.yaml: no docker.image, so --in-docker cannot run this peer")
        argv = ["docker", "run", "-i", "--rm", "--network", "host", "--pull", "never"]
        if run_id:
            from ..core.docker_engine import run_labels

            from secrets import token_hex

            # One run may start a peer once per broker: each container gets its own name.
            argv += ["--name", f"acemq-interop-{run_id}-peer-{self.name}-{token_hex(2)}", *run_labels(run_id, "peer")]
        for folder in mounts:
            argv += ["-v", f"{folder}:{folder}:ro"]
        return [*argv, *self.limits.docker_flags(), str(image)]

    def environment(self) -> dict[str, str]:
        """The harness's environment less every variable that holds a credential (the broker
        URL reaches a peer in `hello`), then the manifest's `env:`."""
        from ..core.redact import child_environ

        return child_environ(self.env)


_ARGV = {"type": "array", "minItems": 1, "items": {"type": ["string", "integer"], "minLength": 1},
         "errorMessage": "an argv: a non-empty list of strings, e.g. [go, run, ./cmd/peer]"}
_GLOBS = {"anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "items": {"type": "string", "minLength": 1}}],
          "errorMessage": "a glob, or a list of globs"}
# What a manifest may say (docs/certifying.md): read by the same strict loader as the
# scenarios (spec/strict_yaml.py), then held to this; a problem is `peer.yaml:LINE: ...`.
MANIFEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "language", "run"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z][a-z0-9_-]*$", "maxLength": 64,
                 "errorMessage": "a peer's name is lower-case letters, digits, _ and -, starting with a letter"},
        "language": {"type": "string", "minLength": 1, "maxLength": 200},
        "description": {"type": "string"},
        "cwd": {"type": "string", "minLength": 1},
        "run": _ARGV,
        "build": {"type": "array", "items": _ARGV},
        "test": {"type": "array", "items": _ARGV},
        "env": {"type": "object", "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                "additionalProperties": {"type": ["string", "integer", "number"]},
                "errorMessage": "env is a mapping of variable names to text (quote a value such as \"1\" or \"true\")"},
        "requires": {"type": "array", "items": {"type": "string", "minLength": 1},
                     "errorMessage": "requires is a list of commands, e.g. [go]"},
        "docker": {"type": "object", "additionalProperties": {"type": "string"},
                   "properties": {"image": {"type": "string", "minLength": 1}},
                   "errorMessage": "docker is a mapping of text, e.g. {dockerfile: Dockerfile, image: acemq-interop/peer-x}"},
        "layout": {"type": "object", "additionalProperties": _GLOBS,
                   "errorMessage": "layout maps binding, adapter and tests to globs"},
        "foreign": {"type": "object", "additionalProperties": False, "required": ["stack"],
                    "properties": {"stack": {"type": "string", "minLength": 1},
                                   "library": {"type": "string", "minLength": 1},
                                   "expected": {"type": "string", "minLength": 1}},
                    "errorMessage": "foreign is a mapping: stack (its name), library, expected (its ground truth file)"},
        "limits": LIMITS_SCHEMA,
        "toolchain": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["name"],
            "properties": {"name": {"type": "string", "minLength": 1}, "command": _ARGV, "check": _ARGV,
                           "version": {"type": "string", "minLength": 1}, "min": {"type": ["string", "number"]},
                           "usual": {"type": "string"}, "debian": {"type": "string"}}}},
    },
}


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    return jsonschema.validators.validator_for(MANIFEST_SCHEMA)(MANIFEST_SCHEMA)


def load_manifest(path: Path) -> Manifest:
    """Read and check one manifest, as strictly as a scenario: a bad one is a UsageError
    `path:line: problem` (no traceback, whatever the file holds)."""
    import jsonschema

    from ..spec import strict_yaml
    from ..spec.scenarios import _schema_problem

    data, root = strict_yaml.read(path)
    if not isinstance(data, dict):
        raise strict_yaml.refuse(path, 1, "a manifest is a mapping with at least name, language and run "
                                          "(see docs/certifying.md for the manifest format)")
    for key in ("name", "language", "run"):
        if key not in data:
            raise strict_yaml.refuse(path, 1, f"missing '{key}' (see docs/certifying.md for the manifest format)")
    error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if error is not None:
        at, problem = _schema_problem(error)
        raise strict_yaml.refuse(path, strict_yaml.line_at(root, at), f"{problem} (see docs/certifying.md for the manifest format)")
    for index, entry in enumerate(data.get("toolchain") or []):
        pattern = entry.get("version")
        if pattern is not None:
            try:
                re.compile(pattern)
            except (re.error, RecursionError, OverflowError) as exc:
                raise strict_yaml.refuse(path, strict_yaml.line_at(root, ["toolchain", index, "version"]),
                                         f"toolchain/{index}/version: {strict_yaml.shown(pattern)} is not a regular expression: {exc}")
    folder = path.parent
    return Manifest(
        name=data["name"],
        language=data["language"],
        description=data.get("description", ""),
        folder=folder,
        cwd=(folder / data.get("cwd", ".")).resolve(),
        run=tuple(str(v) for v in data["run"]),
        build=tuple(tuple(str(v) for v in b) for b in data.get("build") or []),
        test=tuple(tuple(str(v) for v in t) for t in data.get("test") or []),
        env={k: str(v) for k, v in (data.get("env") or {}).items()},
        requires=tuple(data.get("requires") or []),
        docker=dict(data.get("docker") or {}),
        toolchain=tuple(dict(t) for t in data.get("toolchain") or []),
        layout={k: tuple(v if isinstance(v, list) else [v]) for k, v in (data.get("layout") or {}).items()},
        foreign={k: str(v) for k, v in (data.get("foreign") or {}).items()},
        limits=Limits.of(data.get("limits")),
    )


def _manifest_paths(folder: Path) -> list[Path]:
    """A peer folder (it has a peer.yaml) or a folder of peer folders, each with its peer.yaml
    at its top or in its `peer/` (a stack kept beside its adapter: foreign/tutorial)."""
    if (folder / "peer.yaml").is_file():
        return [folder / "peer.yaml"]
    if not folder.is_dir():
        return []
    found = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        found += [p for p in (sub / "peer.yaml", sub / "peer" / "peer.yaml") if p.is_file()][:1]
    return found


def discover(peers_dir: Path = PEERS_DIR, extra: list[Path] | None = None) -> dict[str, Manifest]:
    """Every `peers/<folder>/peer.yaml`, then those of ACEMQ_INTEROP_PEER_PATH and `extra`, by name.

    A name used twice is a usage error naming both folders: a peer kept in its own
    repository must not silently replace an in-tree one.
    """
    found: dict[str, Manifest] = {}
    folders = [peers_dir, *peer_path_from_env(), *(extra or [])]
    for folder in folders:
        if folder != peers_dir and not folder.is_dir():
            raise UsageError(f"{folder}: no such peer folder (from --peer-dir or {PEER_PATH_ENV})")
        for path in _manifest_paths(folder):
            manifest = load_manifest(path)
            if manifest.name in found:
                raise UsageError(f"{path}: peer name '{manifest.name}' is also used by {found[manifest.name].folder}/peer.yaml")
            found[manifest.name] = manifest
    return found


@dataclass(frozen=True)
class PeerSpec:
    """A peer as named on the command line: `name[@profile][+mutant[+mutant...]]`.

    The same process serves every spec of one name; the profile and mutants are passed
    when a requester or responder is opened, so `go@0.3.0` is its own row and column.
    Several mutants (a higher-order mutant, `go+native-only+native-first`) must each act on
    a different object the harness opens: one on `requester.open` (a requester or gatherer
    mutant: gathers live on a requester, and the peer protocol gives it one mutant) and one on
    `responder.start`. `mutants` keeps the order given, so the label is the text as written.
    """

    name: str
    profile: str = "current"
    # The third positional argument may still be one mutant name (or None), as before.
    mutants: tuple[str, ...] | str | None = ()

    def __post_init__(self) -> None:
        value = self.mutants
        if value is None:
            value = ()
        elif isinstance(value, str):
            value = (value,)
        object.__setattr__(self, "mutants", tuple(value))

    @property
    def mutant(self) -> str | None:
        """The first mutant (None without one): for callers that know a spec has at most one.
        Code that gives a mutant to an object asks `mutant_on` instead."""
        return self.mutants[0] if self.mutants else None

    def mutant_on(self, op: str) -> str | None:
        """The mutant of this spec that acts on `op` (`requester.open` | `responder.start`),
        or None. A mutant the catalogue does not know acts on every op (as it always did)."""
        known = catalogue_mutants()
        for name in self.mutants:
            mutant = known.get(name)
            if mutant is None or mutant.acts_on == op:
                return name
        return None

    @property
    def label(self) -> str:
        text = self.name if self.profile == "current" else f"{self.name}@{self.profile}"
        return "+".join((text, *self.mutants))

    @classmethod
    def parse(cls, text: str) -> "PeerSpec":
        match = _SPEC_RE.match(text.strip())
        if not match:
            raise UsageError(f"'{text}' is not a peer spec: write NAME, NAME@PROFILE, NAME@PROFILE+MUTANT or "
                             f"NAME+MUTANT+MUTANT (e.g. go@0.3.0, go+native-only+native-first)")
        names = tuple(part for part in match["mutants"].split("+") if part)
        spec = cls(match["name"], match["profile"] or "current", names)
        _check_mutants(spec)
        return spec


def _check_mutants(spec: PeerSpec) -> None:
    """Each mutant of a spec is in the catalogue, named once, and on an object of its own
    (a usage error saying which two clash, and why, otherwise)."""
    known = catalogue_mutants()
    label = spec.label
    seen: dict[str, str] = {}  # acts_on -> mutant
    for name in spec.mutants:
        if name not in known:
            raise UsageError(f"{label}: unknown mutant '{name}'; mutants: {', '.join(sorted(known))}")
        if name in seen.values():
            raise UsageError(f"{label}: mutant '{name}' is named twice")
        mutant = known[name]
        other = seen.get(mutant.acts_on)
        if other is not None:
            first = known[other]
            if {first.side, mutant.side} == {"requester", "gatherer"}:
                why = ("a gatherer mutant lives on the requester (gathers are a requester's), and the peer protocol "
                       "gives requester.open one mutant, not a list")
            else:
                why = f"both act on {mutant.side}s ({mutant.acts_on}), and the peer protocol gives it one mutant, not a list"
            raise UsageError(f"{label}: mutants '{other}' ({first.side}) and '{name}' ({mutant.side}) cannot be combined: "
                             f"{why}; combine at most one requester or gatherer mutant with one responder mutant")
        seen[mutant.acts_on] = name


_IMAGE_RE = re.compile(r"^(?P<name>[a-z][a-z0-9_-]*)=(?P<image>[A-Za-z0-9][A-Za-z0-9._/:@-]*)$")


def image_manifest(name: str, image: str) -> Manifest:
    """A peer that is an image: `--peers go-rc=registry/peer-go:1.0.0-rc1`.

    It gets its own row and column; the harness runs `docker run -i --rm IMAGE` and sees a
    process with pipes, as for any peer.
    """
    return Manifest(name=name, language="(image)", description=f"the peer in image {image}", folder=Path("."),
                    cwd=Path(".").resolve(), run=("docker", "run", "-i", "--rm", "--network", "host", image),
                    build=(), test=(), env={}, requires=("docker",), docker={"image": image}, image=image)


def parse_peer_list(text: str, manifests: dict[str, Manifest]) -> list[PeerSpec]:
    """Parse `a,b@0.3.0,c=IMAGE,...`, rejecting names with no manifest.

    `NAME=IMAGE` adds an image peer to `manifests` under NAME (a clash with a peer folder's
    name is a usage error).
    """
    parts = [part.strip() for part in text.split(",") if part.strip()]
    specs = []
    for part in parts:
        image = _IMAGE_RE.match(part)
        if image:
            name = image["name"]
            if name in manifests and manifests[name].image != image["image"]:
                raise UsageError(f"'{part}': the name {name} is already the peer in {manifests[name].folder}; "
                                 f"give the image its own name, e.g. {name}-rc={image['image']}")
            manifests[name] = image_manifest(name, image["image"])
            specs.append(PeerSpec(name))
            continue
        specs.append(PeerSpec.parse(part))
    for spec in specs:
        if spec.name not in manifests:
            known = ", ".join(sorted(manifests)) or "none"
            raise UsageError(f"unknown peer '{spec.name}': no peers/*/peer.yaml names it (known: {known})")
    if len(set(specs)) != len(specs):
        raise UsageError(f"a peer is named twice in '{text}'")
    return specs
