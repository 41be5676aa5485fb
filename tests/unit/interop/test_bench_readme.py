"""The README's bench table is what `acemq-interop bench` writes (out/bench.md), pasted whole:
its header, its columns and the form of every cell and note are the command's. The figures
are not checked (they are a run's); their shape is, so a hand-edited or stale-format table
(a ratio without its spread, a dropped column) fails here."""
from __future__ import annotations

import re

import pytest

from acemq_interop.core.paths import DATA_ROOT
from acemq_interop.core.errors import UsageError
from acemq_interop.reports.bench import COLUMNS, README_BEGIN, README_END, markdown, with_table
from acemq_interop.results.bench import BenchResult, BenchSettings, Load, PeerBench
from acemq_interop.results.model import BrokerInfo

README = (DATA_ROOT / "docs" / "performance.md").read_text(encoding="utf-8")  # where the README sends a reader for figures


def _quoted() -> list[str]:
    start, end = README.find(README_BEGIN), README.find(README_END)
    assert 0 <= start < end, f"README: the bench table between '{README_BEGIN}' and '{README_END}'"
    return README[start:end].splitlines()[1:]


def _shape(text: str) -> str:
    return re.sub(r"\d[\d,]*(?:\.\d+)?", "9", text)


def _load(rate: float, client: str, others: float | None = 0.1) -> Load:
    return Load(client, 2000, 2000, 0, 0, 2_000_000 / rate, rate,
                {"p50": 5000.0, "p90": 9000.0, "p99": 20000.0, "max": 30000.0}, [], others)


def _written() -> list[str]:
    """bench.md for peers in every state a row can show: stable, unstable (every ratio), with
    failed requests, without the load op (no figure at all)."""
    stable = PeerBench("dotnet", "acemq-dotnet", "RabbitMQ.Client", 4, 0.08, 36.0, 70.0)
    stable.loads = {"raw": [_load(r, "raw") for r in (10000, 12000, 11000, 9000, 10500)],
                    "binding": [_load(r * 0.7, "binding") for r in (10000, 12000, 11000, 9000, 10500)],
                    "binding_responder": [_load(r * 0.8, "binding") for r in (10000, 12000, 11000, 9000, 10500)],
                    "per_request_queue": [_load(500, "binding") for _ in range(5)]}
    shaky = PeerBench("go", "acemq-go", "amqp091-go", 4, 0.01, 5.0, 12.0)
    shaky.loads = {"raw": [_load(r, "raw") for r in (5000, 12000, 6000, 9000, 7000)],
                   "binding": [_load(r, "binding") for r in (12000, 7000, 12000, 7600, 12000)],
                   "binding_responder": [_load(r, "binding") for r in (2600, 7600, 7100, 7800, 1600)],
                   "per_request_queue": [_load(r, "binding") for r in (300, 900, 500, 250, 700)]}
    shaky.loads["raw"][2] = Load("raw", 2000, 1990, 0, 10, 400.0, 4975.0, {"p50": 1.0, "p90": 2.0, "p99": 3.0, "max": 4.0})
    none = PeerBench("old", "acemq-old", "pika", 1, 0.1, 20.0, 21.0, note="no load op (protocol 1)")
    machine = {"cpus": 2, "cpu_model": "AMD EPYC", "memory_gib": 23.5, "kernel": "6.1", "load_before": [0.2, 1.0, 2.0],
               "load_after": [3.1, 2.0, 2.0]}
    lines = []
    for peers in ([stable, shaky, none], [stable]):  # with unstable ratios, and with none
        result = BenchResult(BenchSettings(), "2026-12-07T07:00:00+00:00", 150.0, {"git_commit": "0123456789abcdef"},
                             machine, BrokerInfo("rabbitmq-3.10.8", "RabbitMQ", "3.10.8", "25.2"), peers, [])
        lines += markdown(result).splitlines()
    return lines


def test_the_readme_quotes_a_table_the_command_writes() -> None:
    quoted, written = _quoted(), _written()
    table = [line for line in written if line.startswith("|")]
    header = table[:2]
    quoted_table = [line for line in quoted if line.startswith("|")]
    assert quoted_table[:2] == header, "README: the bench table's header is not the one `bench` writes"
    assert len(quoted_table) > 2, "README: the bench table has no row"
    rows = [row for row in table if row not in header]
    shapes = [{_shape(row.split(" | ")[i]) for row in rows} for i in range(len(COLUMNS))]
    for row in quoted_table[2:]:
        cells = row.split(" | ")
        assert len(cells) == len(COLUMNS), f"README bench row has {len(cells)} cells, not {len(COLUMNS)}: {row}"
        for i, cell in enumerate(cells[1:], start=1):
            assert _shape(cell) in shapes[i], f"README bench table, {COLUMNS[i]}: '{cell}' is not a form `bench` writes"


def test_the_readme_quotes_the_title_and_notes_the_command_writes() -> None:
    quoted, written = _quoted(), _written()
    assert _shape(quoted[0]) == _shape(written[0]), "README: the bench table's title is not the one `bench` writes"
    starts = {" ".join(line.split()[:2]) for line in written if line and not line.startswith("|")}
    notes = [line for line in quoted[1:] if line and not line.startswith("|")]
    assert notes and notes[-1].startswith("Machine:"), "README: the bench notes end with the machine they ran on"
    for line in notes:
        if line.startswith("- "):
            continue  # a peer's own note or an unstable ratio: free text after its peer's name
        assert " ".join(line.split()[:2]) in starts, f"README bench notes: '{line}' is not a line `bench` writes"


def test_the_command_rewrites_only_the_readme_region() -> None:
    readme = f"intro\n{README_BEGIN}\nold table\n{README_END}\nafter\n"
    assert with_table(readme, "new table\n") == f"intro\n{README_BEGIN}\nnew table\n{README_END}\nafter\n"
    assert with_table(README, "\n".join(_quoted()) + "\n") == README  # the README's region is what the command writes there
    for broken in ("no region\n", f"{README_END}\n{README_BEGIN}\n", f"{README_BEGIN} x\n{README_END}\n"):
        with pytest.raises(UsageError):
            with_table(broken, "table\n")
