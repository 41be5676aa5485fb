"""Views of a bench: the console's tables, the Markdown the README quotes (bench.md, and the
README's marked region rewritten with it), and the change against an earlier bench.json. One
set of cells serves both tables, so what the README shows is what the console printed."""
from __future__ import annotations

import sys
from pathlib import Path

from ..core.errors import UsageError
from ..results.bench import LABELS, BenchResult, PeerBench, RatioChange, write_bench
from ..results.bench_stats import SPREAD_NAME, Ratio, Summary, percent
from ..results.outdir import write_whole

UNSTABLE_MARK = "!"
# The README's bench region: everything between these two lines is bench.md, written by the
# command (`--readme`), never by hand; tests/unit/interop/test_bench_readme.py holds its form.
README_BEGIN = "<!-- bench.md begins: written by `acemq-interop bench --readme docs/performance.md`; do not edit by hand -->"
README_END = "<!-- bench.md ends -->"
COLUMNS = ("peer", "binding requester req/s", "raw client req/s", "binding/raw", "binding responder req/s",
           "responder/raw", "p50 / p99 ms", "a reply queue per request req/s", "shared / per-request", "start-up s",
           "RSS MiB idle -> after")


def _rate(summary: Summary | None) -> str:
    return "-" if summary is None else f"{summary.median:,.0f} ({summary.q1:,.0f}-{summary.q3:,.0f})"


def _ratio(ratio: Ratio | None, times: bool = False) -> str:
    if ratio is None:
        return "-"
    s, x, digits = ratio.summary, "x" if times else "", 1 if times else 2
    return f"{s.median:.{digits}f}{x} ({s.q1:.{digits}f}-{s.q3:.{digits}f})" + (f" {UNSTABLE_MARK}" if ratio.unstable else "")


def _latency(p: PeerBench) -> str:
    p50, p99 = p.latency_ms("binding", "p50"), p.latency_ms("binding", "p99")
    return "-" if p50 is None or p99 is None else f"{p50.median:.1f} / {p99.median:.1f}"


def _rss(p: PeerBench) -> str:
    return f"{p.rss_idle_mib or 0:.0f} -> {p.rss_after_mib or 0:.0f}"


def peer_row(p: PeerBench, bound: float) -> list[str]:
    return [p.peer, _rate(p.rate("binding")), _rate(p.rate("raw")), _ratio(p.ratio("binding_over_raw", bound)),
            _rate(p.rate("binding_responder")), _ratio(p.ratio("responder_over_raw", bound)), _latency(p),
            _rate(p.rate("per_request_queue")), _ratio(p.ratio("shared_over_per_request", bound), times=True),
            f"{p.startup_s:.2f}", _rss(p)]


def title(result: BenchResult) -> str:
    s, b = result.settings, result.broker
    broker = " ".join(x for x in (b.product or "RabbitMQ", b.version or "(version unknown)") if x)
    return (f"Request/reply rate inside each peer, {broker}: median ({SPREAD_NAME}) of {s.repetitions} repetitions, "
            f"{s.requests} requests each ({s.seed_requests} with a reply queue per request), {s.in_flight} in flight, "
            f"{s.body_bytes}-byte bodies")


def notes(result: BenchResult) -> list[str]:
    """What a reader needs beside the table: the unstable ratios and why, failed requests,
    peers without figures, the machine and how busy it was."""
    lines = []
    unstable = result.unstable()
    if unstable:
        lines.append(f"{UNSTABLE_MARK} unstable (its per-pair ratios spread more than {percent(result.settings.bound)} "
                     "of their median; not to be quoted):")
        lines += [f"- {peer} {LABELS[name]}: {why}" for peer, name, why in unstable]
    else:
        lines.append(f"Every ratio's per-pair ratios within {percent(result.settings.bound)} of their median.")
    for p in result.peers:
        if p.failures():
            lines.append(f"- {p.peer}: requests failed in {'; '.join(p.failures())}")
        if p.note:
            lines.append(f"- {p.peer}: {p.note}")
    shares = sorted(load.others_cpu for p in result.peers for loads in p.loads.values() for load in loads
                    if load is not None and load.others_cpu is not None)
    if shares:
        lines.append(f"Other processes (and the hypervisor) used {percent(shares[len(shares) // 2])} of the CPUs by the "
                     f"median over the measurements ({percent(shares[0])}-{percent(shares[-1])}).")
    m, commit = result.machine, (result.suite.get("git_commit") or "")[:12]
    load = " ".join(f"{name} {', '.join(f'{x:.2f}' for x in m[key])}" for name, key in (("before", "load_before"),
                                                                                       ("after", "load_after")) if m.get(key))
    lines.append(f"Machine: {m.get('cpus')} CPUs ({m.get('cpu_model') or '?'}), {m.get('memory_gib')} GiB; "
                 f"load average (1, 5, 15 min) {load or 'unknown'}; {result.started_at}"
                 f"{f', commit {commit}' if commit else ''}; took {result.took_s:.0f} s.")
    return lines


def markdown(result: BenchResult) -> str:
    """The per-peer table as Markdown, with its notes: what the README quotes verbatim."""
    rows = [COLUMNS, *(peer_row(p, result.settings.bound) for p in result.peers)]
    table = [f"| {' | '.join(rows[0])} |", f"| {' | '.join('---' for _ in COLUMNS)} |",
             *(f"| {' | '.join(row)} |" for row in rows[1:])]
    # A blank line around every note but the items of a list, so each renders as its own paragraph.
    spaced: list[str] = []
    for line in notes(result):
        if spaced and not (line.startswith("- ") and spaced[-1].startswith("- ")):
            spaced.append("")
        spaced.append(line)
    return "\n".join([f"{title(result)}:", "", *table, "", *spaced]) + "\n"


def write_markdown(result: BenchResult, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(result)
    return write_whole(out / "bench.md", lambda p: p.write_text(text, encoding="utf-8"))


def with_table(readme: str, table: str) -> str:
    """`readme` with its bench region (README_BEGIN's line to README_END) holding `table`;
    a usage error when the region is missing or broken (the README is never guessed at)."""
    start, end = readme.find(README_BEGIN), readme.find(README_END)
    if start < 0 or end < start:
        raise UsageError(f"no bench region in the README: a line '{README_BEGIN}', then one '{README_END}'")
    body = readme[start + len(README_BEGIN):end]
    if not body.startswith("\n"):
        raise UsageError(f"the README's '{README_BEGIN}' must end its line")
    return readme[:start] + README_BEGIN + "\n" + table + readme[end:]


def _readme(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the README to quote the bench in: {exc}") from exc


def check_readme(path: Path) -> None:
    """A usage error now, not after the bench, when the README at `path` has no bench region."""
    with_table(_readme(path), "")


def write_readme(result: BenchResult, path: Path) -> Path:
    """Rewrites the bench region of the README at `path` with this bench's bench.md."""
    new = with_table(_readme(path), markdown(result))
    return write_whole(path, lambda p: p.write_text(new, encoding="utf-8"))


def write_views(result: BenchResult, out: Path, readme: Path | None = None) -> list[Path]:
    """bench.json and bench.md in `out`, and the README's bench region when one is given."""
    paths = [write_bench(result, out), write_markdown(result, out)]
    if readme is not None:
        paths.append(write_readme(result, readme))
    return paths


def print_bench(result: BenchResult) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 240)
    table = Table(title=title(result))
    for col in COLUMNS:
        table.add_column(col, justify="left" if col == "peer" else "right")
    for p in result.peers:
        table.add_row(*peer_row(p, result.settings.bound))
    console.print(table)
    for line in notes(result):
        console.print(line, markup=False)
    if result.pairs:
        names = sorted({p.requester for p in result.pairs} | {p.responder for p in result.pairs})
        grid = Table(title=f"Pairs: requester (row) x responder (column), binding req/s, median ({SPREAD_NAME}) of "
                           f"{result.settings.pair_repetitions} repetitions of {result.settings.pair_requests} requests")
        grid.add_column("requester \\ responder")
        for n in names:
            grid.add_column(n, justify="right")
        by = {(p.requester, p.responder): p for p in result.pairs}
        for a in names:
            grid.add_row(a, *[_rate(by[(a, c)].rate()) if (a, c) in by else "-" for c in names])
        console.print(grid)


def comparison_text(changes: list[RatioChange], bound: float) -> str:
    """Each ratio of both benches, old -> new, whether they agree within the bound, and for
    those that do not whether a bench had called the ratio unstable: a disagreement between
    two ratios both benches called stable is the bench's own claim failing."""
    if not changes:
        return "No ratio in both bench.json files."
    lines = [f"Ratios against the earlier bench.json (old -> new; agree: within {percent(bound)}; "
             f"{UNSTABLE_MARK}: that bench called it unstable):"]
    for c in sorted(changes, key=lambda c: (c.ratio, c.peer)):
        verdict = "agree" if c.change <= bound else "DIFFER" + ("" if c.foretold else ", though both called it stable")
        mark = [UNSTABLE_MARK if u else " " for u in (c.unstable_before, c.unstable_after)]
        lines.append(f"  {c.peer:<8} {LABELS[c.ratio]:<19} {c.before:>7.2f}{mark[0]} -> {c.after:>7.2f}{mark[1]}  "
                     f"({percent(c.change)}, {verdict})")
    differ = [c for c in changes if c.change > bound]
    unforetold = [c for c in differ if not c.foretold]
    lines.append(f"{len(changes) - len(differ)} of {len(changes)} ratios agree within {percent(bound)}; of the "
                 f"{len(differ)} that differ, {len(differ) - len(unforetold)} were called unstable by a bench, "
                 f"{len(unforetold)} by neither.")
    return "\n".join(lines)
