"""`acemq-interop compare OLD.json NEW.json`: what changed between two runs.

Cells are matched by (broker label, cell id): ids are stable across runs. A regression is a
cell that was fine (PASS, XFAIL, SKIP) and is now bad (FAIL, ERROR, XPASS), or a cell that
FAILs on a different rule than before; a fix is the reverse. Cells that appeared or went are
listed, never counted as regressions: a selection change is not a behaviour change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .files import broken_clauses

BAD = {"FAIL", "ERROR", "XPASS"}


@dataclass
class CellChange:
    key: str
    old: str
    new: str
    old_rule: str | None = None
    new_rule: str | None = None
    message: str = ""
    rerun: str = ""


@dataclass
class Comparison:
    regressions: list[CellChange] = field(default_factory=list)
    fixes: list[CellChange] = field(default_factory=list)
    changed_rules: list[CellChange] = field(default_factory=list)
    other_changes: list[CellChange] = field(default_factory=list)
    appeared: list[str] = field(default_factory=list)
    went: list[str] = field(default_factory=list)
    unchanged: int = 0

    @property
    def regressed(self) -> bool:
        return bool(self.regressions or self.changed_rules)


def _key(cell: dict[str, Any]) -> str:
    broker = cell.get("broker")
    return f"{cell['id']} @ {broker}" if broker else str(cell["id"])


def _by_key(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    keys: dict[str, dict[str, Any]] = {}
    brokers = {c.get("broker") for c in data["cells"]}
    for cell in data["cells"]:
        # A run on one broker names its cells by id alone, so that a run repeated on another
        # broker still compares cell by cell.
        keys[str(cell["id"]) if len(brokers) == 1 else _key(cell)] = cell
    return keys


def _same_failure(old: str | None, new: str | None) -> bool:
    """The same clause; or a run from before clauses named the rule and this one a clause of it."""
    if old == new:
        return True
    if old is None or new is None:
        return False
    return ("." not in old and new.partition(".")[0] == old) or ("." not in new and old.partition(".")[0] == new)


def _same_failures(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Both FAILs broke the same clauses (a version-1 file lists only the first: then the
    first clauses are compared)."""
    before, after = broken_clauses(old), broken_clauses(new)
    if not old.get("failures") or not new.get("failures"):
        return _same_failure(before[0] if before else None, after[0] if after else None)
    return len(before) == len(after) and all(any(_same_failure(b, a) for a in after) for b in before)


def compare(old: dict[str, Any], new: dict[str, Any]) -> Comparison:
    before, after = _by_key(old), _by_key(new)
    result = Comparison()
    result.appeared = sorted(set(after) - set(before))
    result.went = sorted(set(before) - set(after))
    for key in sorted(set(before) & set(after)):
        o, n = before[key], after[key]
        change = CellChange(key, o["status"], n["status"], ", ".join(broken_clauses(o)) or None, ", ".join(broken_clauses(n)) or None,
                            (n.get("message") or "").splitlines()[0] if n.get("message") else "", n.get("rerun") or "")
        if o["status"] == n["status"]:
            if n["status"] == "FAIL" and not _same_failures(o, n):
                result.changed_rules.append(change)
            else:
                result.unchanged += 1
        elif n["status"] in BAD and o["status"] not in BAD:
            result.regressions.append(change)
        elif o["status"] in BAD and n["status"] not in BAD:
            result.fixes.append(change)
        else:
            result.other_changes.append(change)
    return result


def _line(c: CellChange) -> str:
    rule = f" {c.new_rule}" if c.new_rule else ""
    text = f"  {c.key}: {c.old} -> {c.new}{rule}"
    return text + (f" ({c.message})" if c.message else "")


def as_text(c: Comparison, old_name: str, new_name: str) -> str:
    lines = [f"Compared {old_name} -> {new_name}: {len(c.regressions)} new failure(s), {len(c.fixes)} fix(es), "
             f"{len(c.changed_rules)} changed rule(s), {len(c.appeared)} cell(s) appeared, {len(c.went)} went, "
             f"{c.unchanged} unchanged"]
    for title, items in (("New failures", c.regressions), ("Changed rules", c.changed_rules), ("Fixed", c.fixes),
                         ("Other status changes", c.other_changes)):
        if items:
            lines.append(f"{title}:")
            for item in items:
                lines.append(_line(item) if title != "Changed rules" else f"  {item.key}: FAIL {item.old_rule} -> FAIL {item.new_rule}")
                if item.rerun and title in ("New failures", "Changed rules"):
                    lines.append(f"    rerun: {item.rerun}")
    for title, keys in (("Appeared", c.appeared), ("Went", c.went)):
        if keys:
            lines.append(f"{title}: " + ", ".join(keys[:20]) + (f" and {len(keys) - 20} more" if len(keys) > 20 else ""))
    lines.append("Verdict: REGRESSION" if c.regressed else "Verdict: no regression")
    return "\n".join(lines)


def as_markdown(c: Comparison, old_name: str, new_name: str) -> str:
    out = [f"### What changed: `{old_name}` → `{new_name}`", "",
           f"**{'Regression' if c.regressed else 'No regression'}**: {len(c.regressions)} new failure(s), "
           f"{len(c.fixes)} fix(es), {len(c.changed_rules)} changed rule(s), {len(c.appeared)} appeared, "
           f"{len(c.went)} went, {c.unchanged} unchanged.", ""]
    rows = [(i, "new failure") for i in c.regressions] + [(i, "rule changed") for i in c.changed_rules] + \
           [(i, "fixed") for i in c.fixes] + [(i, "changed") for i in c.other_changes]
    if rows:
        out += ["| cell | was | now | rule | change |", "| --- | --- | --- | --- | --- |"]
        for item, what in rows:
            rule = item.new_rule or item.old_rule or ""
            out.append(f"| `{item.key}` | {item.old}{' ' + item.old_rule if item.old_rule and what == 'rule changed' else ''} "
                       f"| {item.new} | {rule} | {what} |")
        out.append("")
    for title, keys in (("Appeared", c.appeared), ("Went", c.went)):
        if keys:
            out.append(f"{title}: " + ", ".join(f"`{k}`" for k in keys))
            out.append("")
    return "\n".join(out)
