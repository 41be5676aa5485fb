"""The adapter's table from catalogue names (mutants, profiles) to the binding's policies.

The table is read from catalogue/catalogue.yaml when the peer says hello, so it is
the catalogue itself: every mutant's ``policy`` and every profile's values for this
peer, applied to ``acemq``'s RequesterPolicy / ResponderPolicy field by field. A
catalogue knob the binding lacks, or a value it does not take, fails at start-up.

The file is found through ``$ACEMQ_CATALOGUE``, else by walking up from this file
to a folder holding ``catalogue/catalogue.yaml`` (a checkout, or a Docker image with
the same layout), else under ``{sys.prefix}/share/acemq-interop`` (a pip install).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from acemq._conformance import RequesterPolicy, ResponderPolicy

PEER = "python"
CURRENT = "current"
# Which policy a mutant's side configures: a gatherer is a requester's gathers.
_POLICY_OF_SIDE = {"requester": "requester", "gatherer": "requester", "responder": "responder"}
# Catalogue mutants marked ``only_where`` that pika cannot have, with why: they are not
# offered. A mutant named here without ``only_where`` in the catalogue fails at start-up,
# as does any other catalogue mutant the binding cannot take.
CANNOT_HAVE: dict[str, str] = {
    "narrow-int-header": "pika writes an int header as I or l, never B, u or i",
}


class UnknownName(ValueError):
    """A profile or mutant the catalogue does not offer this peer."""


def find_catalogue() -> Path:
    explicit = os.environ.get("ACEMQ_CATALOGUE")
    if explicit:
        return Path(explicit)
    here = Path(__file__).resolve().parent
    for folder in (here, *here.parents):
        candidate = folder / "catalogue" / "catalogue.yaml"
        if candidate.is_file():
            return candidate
    installed = Path(sys.prefix) / "share" / "acemq-interop" / "catalogue" / "catalogue.yaml"
    if installed.is_file():
        return installed
    raise FileNotFoundError(f"catalogue/catalogue.yaml not found above {here} nor under {sys.prefix}; set ACEMQ_CATALOGUE")


@dataclass(frozen=True)
class _Settings:
    """The policy values one name sets, per side."""

    requester: dict[str, Any]
    responder: dict[str, Any]


class PolicyTable:
    def __init__(self, catalogue: dict[str, Any], peer: str = PEER) -> None:
        self.mutant_sides: dict[str, str] = {}
        self._mutants: dict[str, _Settings] = {}
        for name in CANNOT_HAVE:
            if name in catalogue["mutants"] and not catalogue["mutants"][name].get("only_where"):
                raise ValueError(f"catalogue mutant {name} has no only_where, so this peer must offer it; drop it from CANNOT_HAVE")
        self._offered = [name for name in catalogue["mutants"] if name not in CANNOT_HAVE]
        for name in self._offered:
            mutant = catalogue["mutants"][name]
            side = _POLICY_OF_SIDE[mutant["side"]]
            self.mutant_sides[name] = side
            values = dict(mutant.get("policy") or {})
            self._mutants[name] = _Settings(values if side == "requester" else {}, values if side == "responder" else {})
        self._profiles: dict[str, _Settings] = {}
        for name, profile in catalogue["profiles"].items():
            peers = profile.get("peers") or {}
            if name == CURRENT or peer in peers:
                mine = peers.get(peer) or {}
                self._profiles[str(name)] = _Settings(dict(mine.get("requester") or {}), dict(mine.get("responder") or {}))
        # Every name must make valid policies now, not when a scenario first uses it.
        for profile in self._profiles:
            for mutant in (None, *self._mutants):
                self.requester(profile, mutant)
                self.responder(profile, mutant)

    @classmethod
    def load(cls, path: Optional[Path] = None) -> "PolicyTable":
        # libyaml's loader where PyYAML has it: ten times faster, and hello waits for this.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        with open(path or find_catalogue(), encoding="utf-8") as stream:
            return cls(yaml.load(stream, Loader=loader))

    @property
    def profiles(self) -> list[str]:
        return list(self._profiles)

    @property
    def mutants(self) -> list[str]:
        """The mutants hello offers: the catalogue's, but those in CANNOT_HAVE."""
        return list(self._offered)

    def requester(self, profile: Optional[str], mutant: Optional[str]) -> RequesterPolicy:
        profile_values, mutant_values = self._lookup(profile, mutant)
        return RequesterPolicy(**{**profile_values.requester, **mutant_values.requester})

    def responder(self, profile: Optional[str], mutant: Optional[str]) -> ResponderPolicy:
        profile_values, mutant_values = self._lookup(profile, mutant)
        return ResponderPolicy(**{**profile_values.responder, **mutant_values.responder})

    def _lookup(self, profile: Optional[str], mutant: Optional[str]) -> tuple[_Settings, _Settings]:
        """A mutant of the other side sets nothing on this one: that side runs as current."""
        profile = CURRENT if profile is None else profile
        if profile not in self._profiles:
            raise UnknownName(f"unknown profile {profile!r}; this peer offers {', '.join(self._profiles)}")
        if mutant is None:
            return self._profiles[profile], _Settings({}, {})
        if mutant in CANNOT_HAVE:
            raise UnknownName(f"mutant {mutant!r} is not offered by this peer: {CANNOT_HAVE[mutant]}")
        if mutant not in self._mutants:
            raise UnknownName(f"unknown mutant {mutant!r}; this peer offers {', '.join(self._offered)}")
        return self._profiles[profile], self._mutants[mutant]
