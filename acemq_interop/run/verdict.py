"""The known-failure verdict: a cell's raw status and the known-failures list give its final status.

Pure functions, no I/O: the runner calls `verdict` on every cell's raw result (PASS, FAIL,
ERROR or SKIP) and stores what it returns; nothing rewrites a status afterwards.

- a listed cell that FAILs is XFAIL (with the entry's reason and link), unless the entry
  names a rule (or a clause) and the cell broke another one: then it stays FAIL, saying so
  (an entry naming a rule, RR-1, covers a FAIL of any of its clauses, RR-1.2);
- a listed cell that is an ERROR is XFAIL too, unless the entry names a rule (a known
  failure of a rule is a FAIL of that rule, never a crash);
- a listed cell that PASSes is XPASS, which fails the run, so the list cannot go stale;
- a SKIP stays a SKIP, and an unlisted cell keeps its raw status.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ..spec.known_failures import KnownFailure, match_known
from ..results.model import Status


@dataclass(frozen=True)
class Verdict:
    status: Status
    reason: str | None = None  # None: keep the raw result's reason
    known: KnownFailure | None = None


def verdict(cell_id: str, raw: Status | str, failed: str | Sequence[str] | None, known: Sequence[KnownFailure]) -> Verdict:
    """`failed`: the clause a FAIL broke, or every clause it broke (all must be the listed rule's)."""
    status = Status(raw)
    entry = match_known(cell_id, list(known))
    if entry is None:
        return Verdict(status)
    broken = [failed] if isinstance(failed, str) or failed is None else list(failed) or [None]
    others = [c for c in broken if not _breaks(c, entry.rule)] if entry.rule else []
    if status == Status.FAIL and others:
        return Verdict(Status.FAIL, f"listed as a known failure of {entry.rule} in {entry.source}, but it broke "
                                    f"{', '.join(str(c) for c in others)}", entry)
    if status == Status.FAIL or (status == Status.ERROR and not entry.rule):
        return Verdict(Status.XFAIL, f"{entry.reason} ({entry.link})" if entry.link else entry.reason, entry)
    if status == Status.PASS:
        return Verdict(Status.XPASS, f"listed as a known failure in {entry.source} but passed: remove the entry ({entry.reason})", entry)
    return Verdict(status, None, entry)


def _breaks(failed: str | None, listed: str) -> bool:
    """A FAIL of `failed` (a clause) is the listed failure: the same clause, or a clause of the listed rule."""
    return failed is not None and (failed == listed or ("." not in listed and failed.partition(".")[0] == listed))


def rerun_line(peer_labels: Iterable[str], cell_id: str, broker_url: str | None = None,
               extra_flags: Iterable[str] = ()) -> str:
    """The one-line command that reruns just this cell."""
    from ..core.redact import BROKER_ENV, has_secret

    peers = ",".join(sorted(set(peer_labels)))
    extra = " ".join(extra_flags)
    if broker_url and has_secret(broker_url):
        # Never the password: the rerun reads the same URL from the environment.
        broker = f' --broker "${BROKER_ENV}"'
    else:
        broker = f" --broker {broker_url}" if broker_url else ""
    return f"acemq-interop run --peers {peers} --cell '{cell_id}'{broker}" + (f" {extra}" if extra else "")
